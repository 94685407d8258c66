/**
 * The project's own documentation stays true and self-contained:
 * - the route table in docs/api.md lists exactly the operations `/openapi.json` documents, each
 *   with the grant it names (`x-termkeep-grant`), in both directions;
 * - no tracked file points at a document outside the repository (a user's clone has none);
 * - every relative link in README.md and docs/ reaches a file, and its #anchor a heading there.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../api/app.ts'
import { SidecarClient } from '../../api/sidecar-client.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { anchorsOf, compareRoutes, describeMismatch, parseRouteTable, relativeLinks, servedRoutes } from './docs-check.ts'

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'))
const API_DOC = join(ROOT, 'docs/api.md')

describe('the docs checks themselves', () => {
  const table = [
    '<!-- route-table:begin -->',
    '| method | path | grant | purpose |',
    '|---|---|---|---|',
    '| GET | `/v1/health` | none | liveness |',
    '| GET | `/v1/sessions/:sid/terminals` | `terminals:control` or `terminals:display` | list |',
    '| POST | `/v1/tickets` | any valid token | ticket |',
    '<!-- route-table:end -->',
  ].join('\n')

  it('reads the marked table: method, path, grant without backticks', () => {
    expect(parseRouteTable(`intro\n${table}\nafter`)).toEqual([
      { method: 'GET', path: '/v1/health', grant: 'none' },
      { method: 'GET', path: '/v1/sessions/:sid/terminals', grant: 'terminals:control or terminals:display' },
      { method: 'POST', path: '/v1/tickets', grant: 'any valid token' },
    ])
    expect(() => parseRouteTable('no table here')).toThrow(/route-table:begin/)
    expect(() => parseRouteTable(table.replace('| GET | `/v1/health`', '| FETCH | `/v1/health`'))).toThrow(/FETCH/)
    expect(() => parseRouteTable(table.replace(':sid', '{sid}'))).toThrow(/:sid, not \{sid\}/)
  })

  it('finds missing rows, extra rows and wrong grants, and says what to do', () => {
    const documented = parseRouteTable(table)
    const served = servedRoutes({
      paths: {
        '/v1/health': { get: {} },
        '/v1/sessions/{sid}/terminals': { get: { 'x-termkeep-grant': 'terminals:control' } },
        '/v1/things/{id}': { delete: { 'x-termkeep-grant': 'admin' } },
      },
    })
    const result = compareRoutes(documented, served)
    expect(result.missing).toEqual([{ method: 'DELETE', path: '/v1/things/:id', grant: 'admin' }])
    expect(result.extra).toEqual([{ method: 'POST', path: '/v1/tickets', grant: 'any valid token' }])
    expect(result.wrongGrant).toEqual([
      {
        method: 'GET',
        path: '/v1/sessions/:sid/terminals',
        documented: 'terminals:control or terminals:display',
        served: 'terminals:control',
      },
    ])
    const message = describeMismatch(result)
    expect(message).toContain('add a row')
    expect(message).toContain('| DELETE | `/v1/things/:id` | `admin` |')
    expect(message).toContain('POST /v1/tickets')
    expect(compareRoutes(documented, documented)).toEqual({ missing: [], extra: [], wrongGrant: [] })
  })

  it('slugs headings as GitHub does and finds relative links', () => {
    expect(
      anchorsOf('# The HTTP API\n## Files and Files.readText\n## What `/v1/health` says\n```\n# not a heading\n```\n## Routes\n## Routes'),
    ).toEqual(new Set(['the-http-api', 'files-and-filesreadtext', 'what-v1health-says', 'routes', 'routes-1']))
    expect(relativeLinks('see [a](docs/a.md#x), [b](https://x.org), [c](#local), `[d](not/a/link.md)`')).toEqual([
      { target: 'docs/a.md', anchor: 'x' },
      { target: '', anchor: 'local' },
    ])
  })
})

describe('docs/api.md', () => {
  let dir: string
  let storage: Storage
  let document: { paths: Record<string, Record<string, { 'x-termkeep-grant'?: string }>> }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'termkeep-docs-'))
    storage = await openStorage({ url: `file:${join(dir, 'termkeep.db')}` })
    await migrate(storage.client)
    // /openapi.json describes the routes; nothing here calls the sidecar, so none is started.
    const app = createApp({
      db: storage.db,
      client: storage.client,
      sidecar: new SidecarClient({ url: 'http://127.0.0.1:9', secret: 'docs-test-secret-0123456789' }),
      runtime: 'node',
    })
    const response = await app.request('/openapi.json')
    expect(response.status).toBe(200)
    document = await response.json()
  })

  afterAll(() => {
    storage?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('lists every route of /openapi.json with its grant, and no other', () => {
    const served = servedRoutes(document)
    expect(served.length).toBeGreaterThan(40)
    const result = compareRoutes(parseRouteTable(readFileSync(API_DOC, 'utf8')), served)
    expect(result, describeMismatch(result)).toEqual({ missing: [], extra: [], wrongGrant: [] })
  })
})

describe('the repository', () => {
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((path) => path !== '' && !path.startsWith('node_modules/') && existsSync(join(ROOT, path)))

  it('refers to no document outside itself', () => {
    // Spelled in pieces so this file does not match itself.
    const outside = ['..' + '/shared/', '/work' + '/shared', 'contracts' + '-digest']
    const offenders: string[] = []
    for (const path of tracked) {
      const text = readFileSync(join(ROOT, path), 'utf8')
      text.split('\n').forEach((line, i) => {
        if (outside.some((needle) => line.includes(needle))) offenders.push(`${path}:${i + 1}: ${line.trim().slice(0, 120)}`)
      })
    }
    expect(offenders, `a user's clone has no such file; say it in docs/ instead:\n${offenders.join('\n')}`).toEqual([])
  })

  it('names the token variable TERMKEEP_TOKEN everywhere, and the CLI by a form that runs', () => {
    const documents = tracked.filter((path) => path === 'README.md' || (path.startsWith('docs/') && path.endsWith('.md')))
    for (const path of documents) {
      const text = readFileSync(join(ROOT, path), 'utf8')
      expect(text.match(/\$\{?TOKEN\b/g), `${path} uses $TOKEN`).toBeNull()
      // In commands (code blocks and inline code), never `npx termkeep`: it runs npm's install step.
      const commands = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).join('\n')
      expect(commands, `${path} runs npx termkeep`).not.toContain('npx termkeep')
    }
  })

  it('has README and docs links that reach a file and a heading there', () => {
    const documents = tracked.filter((path) => path === 'README.md' || (path.startsWith('docs/') && path.endsWith('.md')))
    expect(documents).toContain('docs/api.md')
    const broken: string[] = []
    for (const path of documents) {
      for (const { target, anchor } of relativeLinks(readFileSync(join(ROOT, path), 'utf8'))) {
        const file = target === '' ? join(ROOT, path) : normalize(join(ROOT, dirname(path), target))
        const shown = `${path} → ${target}${anchor ? `#${anchor}` : ''}`
        if (!existsSync(file) || relative(ROOT, file).startsWith('..')) broken.push(`${shown} (no such file in the repository)`)
        else if (anchor && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${shown} (no such heading)`)
      }
    }
    expect(broken, broken.join('\n')).toEqual([])
  })
})
