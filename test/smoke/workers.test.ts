/**
 * The smoke suite on Workers: the bundle `wrangler deploy --dry-run` produces, run by workerd
 * through Miniflare on a loopback port, configured only through bindings, against sqld and the
 * sidecar. Also keeps the bundle lean: no zod, no effect, no dangling bare imports.
 */
import { readFileSync, statSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { describeSmoke } from './routes.ts'
import { buildWorker, startWorkersTarget, type WorkerBundle } from './targets.ts'

/** The lean budget: about 450 KiB today; zod alone would add ~400 KiB. */
const MAX_BUNDLE_BYTES = 700 * 1024

let bundle: WorkerBundle | undefined
const built = () => (bundle ??= buildWorker())

afterAll(() => bundle?.remove())

describe('Workers bundle (wrangler deploy --dry-run)', () => {
  let code = ''
  let sources: string[] = []
  beforeAll(() => {
    code = readFileSync(built().script, 'utf8')
    sources = (JSON.parse(readFileSync(`${built().script}.map`, 'utf8')) as { sources: string[] }).sources
  }, 180_000)

  it(`stays lean (under ${MAX_BUNDLE_BYTES / 1024} KiB)`, () => {
    const size = statSync(built().script).size
    console.log(`Workers bundle: ${(size / 1024).toFixed(1)} KiB`)
    expect(size).toBeLessThan(MAX_BUNDLE_BYTES)
  })

  it('bundles no zod, effect, sury or native libSQL code', () => {
    const offenders = sources.filter((s) =>
      /node_modules\/(zod|zod-openapi|zod-to-json-schema|effect|sury|libsql|@libsql\/(linux|darwin|win32)[^/]*)\//.test(s),
    )
    expect(offenders).toEqual([])
  })

  it('leaves no bare dynamic import unresolved (workerd would reject the module)', () => {
    const dangling = [...code.matchAll(/\bimport\(\s*["']([^"'./][^"']*)["']\s*\)/g)].map((m) => m[1])
    expect(dangling.filter((specifier) => !specifier!.startsWith('node:') && !specifier!.startsWith('cloudflare:'))).toEqual([])
  })
})

describeSmoke('Workers API (workerd) on a remote libSQL server', 'workerd', (backend) =>
  startWorkersTarget(built(), {
    DATABASE_URL: backend.databaseUrl,
    SIDECAR_URL: backend.sidecar.url,
    SIDECAR_SECRET: backend.sidecar.secret,
    AUTO_MIGRATE: '1',
  }),
)
