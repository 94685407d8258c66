/**
 * The smoke suite on Workers: the bundle `wrangler deploy --dry-run` produces, run by workerd
 * through Miniflare on a loopback port, configured only through bindings, against sqld and the
 * sidecar. Also keeps the bundle lean: one zod (the MCP SDK's), no Ajv, no effect, no dangling bare
 * imports, web libSQL only.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrations } from '../../migrations/bundled.ts'
import { openStorage } from '../../storage/client.ts'
import { freePort, waitFor } from '../support/ports.ts'
import { SQLD_BIN, startSqld } from '../support/sqld.ts'
import { describeSmoke } from './routes.ts'
import { buildWorker, startWorkersTarget, workerdBinary, type WorkerBundle } from './targets.ts'

/**
 * Budget for everything except the bundled web page (web/, served by the API on every runtime).
 * Measured 1,426 KiB on the MCP server's landing (late 2026; ~600 KiB before it). The MCP SDK
 * brings what it cannot run without: zod (~250 KiB: it validates every JSON-RPC message with zod
 * v4, v4-mini and v3), the SDK itself (~150 KiB) and zod-to-json-schema (~50 KiB); re2js (~280 KiB,
 * mostly Unicode tables) makes `wait_for` patterns linear-time. Ajv (~285 KiB with its formats)
 * is stubbed: termkeep never elicits, the only use of the SDK's validator. Features since grew it to
 * ~1,538 KiB (health's write and liveness checks among them, ~10 KiB), then commands, names,
 * search and scrollback (their routes, schemas, queries and MCP tools) to ~1,600 KiB. A second
 * copy of zod, Ajv coming back or hono-openapi's other vendors (each 250 KiB or more) would cross
 * this.
 */
const MAX_API_BYTES = 1700 * 1024
/** hono-openapi's optional vendors, the SDK's stubbed Ajv, native libSQL: never in the bundle. */
const FORBIDDEN_INPUT = /node_modules\/(zod-openapi|effect|sury|arktype|ajv|ajv-formats|libsql|@libsql\/(linux|darwin|win32)[^/]*)\//

let bundle: WorkerBundle | undefined
const built = () => (bundle ??= buildWorker())

afterAll(() => bundle?.remove())

describe('Workers bundle (wrangler deploy --dry-run)', () => {
  let code = ''
  let inputs: Record<string, { bytesInOutput: number }> = {}
  beforeAll(() => {
    code = readFileSync(built().script, 'utf8')
    const meta = JSON.parse(readFileSync(built().meta, 'utf8')) as {
      outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>
    }
    const output = Object.entries(meta.outputs).find(([path]) => path.endsWith('workers.js'))
    if (!output) throw new Error(`no workers.js in ${built().meta}`)
    inputs = output[1].inputs
  }, 180_000)

  it(`stays lean: the API code (all but the web page) is under ${MAX_API_BYTES / 1024} KiB`, () => {
    const total = statSync(built().script).size
    const web = Object.entries(inputs)
      .filter(([path]) => path.startsWith('web/'))
      .reduce((sum, [, input]) => sum + input.bytesInOutput, 0)
    console.log(
      `Workers bundle: ${(total / 1024).toFixed(1)} KiB (web page ${(web / 1024).toFixed(1)} KiB, API ${((total - web) / 1024).toFixed(1)} KiB)`,
    )
    expect(total - web).toBeLessThan(MAX_API_BYTES)
  })

  it("bundles no Ajv, effect, sury or native libSQL code, one zod (the MCP SDK's), and the web libSQL client", () => {
    expect(Object.keys(inputs).filter((path) => FORBIDDEN_INPUT.test(path))).toEqual([])
    const zod = Object.keys(inputs).filter((path) => /(^|\/)node_modules\/zod\//.test(path))
    expect(zod.length).toBeGreaterThan(0)
    expect(zod.filter((path) => !path.startsWith('node_modules/zod/'))).toEqual([])
    expect(Object.keys(inputs)).toContain('node_modules/@libsql/client/lib-esm/web.js')
  })

  it('leaves no bare dynamic import unresolved (workerd would reject the module)', () => {
    const dangling = [...code.matchAll(/\bimport\(\s*["']([^"'./][^"']*)["']\s*\)/g)].map((m) => m[1]!)
    expect(dangling.filter((specifier) => !specifier.startsWith('node:') && !specifier.startsWith('cloudflare:'))).toEqual([])
  })
})

if (workerdBinary()) {
  describe('Workers entry configuration', () => {
    it('answers a clear 500 naming the variable when DATABASE_URL is not remote (Workers have no filesystem)', async () => {
      const target = await startWorkersTarget(built(), { DATABASE_URL: 'file:./data/x.db', SIDECAR_SECRET: 'a-secret-of-16-chars-or-more' })
      try {
        const response = await fetch(`${target.url}/v1/health`)
        expect(response.status).toBe(500)
        expect((await response.json()).error.message).toMatch(/DATABASE_URL.*no filesystem/)
      } finally {
        await target.stop()
      }
    }, 120_000)

    it.runIf(existsSync(SQLD_BIN))(
      'AUTO_MIGRATE=1 applies the bundled migrations to an empty remote database',
      async () => {
        const sqld = await startSqld()
        const target = await startWorkersTarget(built(), {
          DATABASE_URL: sqld.url,
          SIDECAR_SECRET: 'a-secret-of-16-chars-or-more',
          SIDECAR_URL: `http://127.0.0.1:${await freePort()}`,
          AUTO_MIGRATE: '1',
        })
        const storage = await openStorage({ url: sqld.url })
        try {
          const health = await (await fetch(`${target.url}/v1/health`)).json()
          expect(health).toMatchObject({ runtime: 'workerd', database: { reachable: true } })
          const ledger = await storage.client.execute('SELECT hash FROM __drizzle_migrations ORDER BY created_at')
          expect(ledger.rows.map((row) => row[0])).toEqual(migrations.map((m) => m.hash))
        } finally {
          storage.close()
          await target.stop()
          await sqld.stop()
        }
      },
      120_000,
    )

    it.runIf(existsSync(SQLD_BIN))(
      'a database down at the first request answers 503; the isolate starts once it is up',
      async () => {
        const port = await freePort()
        const target = await startWorkersTarget(built(), {
          DATABASE_URL: `http://127.0.0.1:${port}`,
          SIDECAR_SECRET: 'a-secret-of-16-chars-or-more',
          SIDECAR_URL: `http://127.0.0.1:${await freePort()}`,
          AUTO_MIGRATE: '1',
        })
        const dir = mkdtempSync(join(tmpdir(), 'termkeep-late-sqld-'))
        let sqld: ChildProcess | undefined
        try {
          const down = await fetch(`${target.url}/v1/health`)
          expect(down.status).toBe(503)
          expect((await down.json()).error.code).toBe('database/unavailable')
          sqld = spawn(SQLD_BIN, ['--db-path', join(dir, 'db'), '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'], {
            stdio: 'ignore',
          })
          await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).ok, 20_000, 'sqld')
          const up = await fetch(`${target.url}/v1/health`)
          expect(up.status).toBe(200)
          expect(await up.json()).toMatchObject({ runtime: 'workerd', database: { reachable: true } })
        } finally {
          await target.stop()
          if (sqld && sqld.exitCode === null) {
            const exited = new Promise((resolve) => sqld!.once('exit', resolve))
            sqld.kill('SIGKILL')
            await exited
          }
          rmSync(dir, { recursive: true, force: true })
        }
      },
      120_000,
    )
  })

  describeSmoke('Workers API (workerd) on a remote libSQL server', 'workerd', (backend) =>
    startWorkersTarget(built(), {
      DATABASE_URL: backend.databaseUrl,
      SIDECAR_URL: backend.sidecar.url,
      SIDECAR_SECRET: backend.sidecar.secret,
      AUTO_MIGRATE: '1',
    }),
  )
} else {
  describe.skip('Workers API (skipped: no workerd binary for this platform; @cloudflare/workerd-* covers linux/darwin x64 and arm64)', () => {
    it('needs workerd', () => {})
  })
}
