/**
 * Every SSE route takes an EventSource ticket: the list of stream routes is read from the routes
 * themselves (api/stream-routes.ts, what POST /v1/tickets accepts), and this test opens each of
 * them with a ticket and no Authorization header — as a browser's EventSource does — against a
 * real sidecar: 200 and the stream's first bytes, then the spent ticket is 401. A stream route
 * mounted without a case here fails the test by name.
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { streamRoutes } from '../../api/stream-routes.ts'
import { GRANTS } from '../../schema/grants.ts'
import { waitFor } from '../support/ports.ts'
import { readEvents, startHarness, type Harness } from './harness.ts'

let h: Harness
let admin: string
/** Query (besides the ticket) each stream route needs, by its path as mounted. */
let queries: Record<string, Record<string, string>>

const S = '/v1/sessions/s1'
const T = `${S}/terminals/t1`
const O = `${S}/terminals/obs`
const json = async (response: Response) => (await response.json()) as any

beforeAll(async () => {
  h = await startHarness()
  admin = await h.token(GRANTS, 'all')
  const dir = realpathSync((mkdirSync(join(h.dir, 'ws', 'tickets'), { recursive: true }), join(h.dir, 'ws', 'tickets')))
  const home = realpathSync((mkdirSync(join(h.dir, 'home', '.agent'), { recursive: true }), join(h.dir, 'home')))
  writeFileSync(join(home, '.agent', 'log.jsonl'), '{"n":1}\n')
  await h.request('POST', '/v1/workspaces', { token: admin, body: { path: dir } })
  await h.request('POST', '/v1/sessions', { token: admin, body: { id: 's1', cwd: dir } })
  for (const [tid, command] of [
    ['t1', 'echo ready; exec sleep 300'],
    ['obs', `HOME=${home} exec sleep 300`],
  ]) {
    const created = await h.request('PUT', `${S}/terminals/${tid}`, { token: admin, body: { cols: 80, rows: 24, command } })
    expect(created.status, tid).toBe(201)
  }
  // readDisplay needs a settled screen.
  await waitFor(async () => {
    const display = await h.request('GET', `${T}/display`, { token: admin })
    await display.body?.cancel()
    return display.status === 200
  }, 15_000)
  const observe = (op: string, body: unknown) => h.request('POST', `${O}/observation/files/${op}`, { token: admin, body }).then(json)
  const root = (await waitFor(async () => (await observe('resolveHomeDirectory', { relativePath: '.agent' })).handle, 15_000)) as {
    id: string
  }
  const file = (await observe('resolveHomeRelative', { relativePath: '.agent/log.jsonl' })).handle as { id: string }
  // A run to read the events of (its row is all the events route needs).
  await h.storage.client.execute({
    sql: "INSERT INTO workflow_runs (id, session_id, status, script, concurrency, token_id, host_generation) VALUES ('wf_r1', 's1', 'completed', 'return 1', 1, 'x', 1)",
    args: [],
  })
  queries = {
    '/v1/workspaces/watch': {},
    '/v1/hosts/watch': {},
    '/v1/sessions/:sid/files/changes': {},
    '/v1/sessions/:sid/terminals/:tid/follow': { attachment: 'browser' },
    '/v1/sessions/:sid/terminals/:tid/retain': {},
    '/v1/sessions/:sid/terminals/:tid/output/watch': {},
    '/v1/sessions/:sid/terminals/:tid/display': {},
    '/v1/sessions/:sid/terminals/:tid/screen/watch': {},
    '/v1/sessions/:sid/terminals/:tid/commands/watch': {},
    '/v1/sessions/:sid/workflows/:rid/events': {},
    '/v1/sessions/:sid/terminals/:tid/observation/files/watchDirectory': {
      root: root.id,
      extensions: '.jsonl',
      maxDepth: '1',
      maxEntries: '10',
      maxBytes: '100000',
    },
    '/v1/sessions/:sid/terminals/:tid/observation/files/follow': { handle: file.id },
  }
}, 90_000)

afterAll(async () => {
  await h?.close()
})

/** A mounted path with this test's ids (the observation streams watch the `obs` terminal). */
function concrete(path: string): string {
  const tid = path.includes('/observation/') ? 'obs' : 't1'
  return path.replace(':sid', 's1').replace(':tid', tid).replace(':rid', 'wf_r1')
}

describe('EventSource tickets for every SSE route', () => {
  it('are read from the routes: every GET answering text/event-stream, each with a case here', () => {
    const { paths } = streamRoutes(h.app)
    expect(paths.length).toBeGreaterThanOrEqual(11)
    expect([...paths].sort()).toEqual(Object.keys(queries).sort())
  })

  it('open each stream once, without an Authorization header, and are spent by it', async () => {
    for (const path of streamRoutes(h.app).paths) {
      const url = concrete(path)
      const minted = await h.request('POST', '/v1/tickets', { token: admin, body: { path: url } })
      expect(minted.status, `${path}: ${JSON.stringify(await minted.clone().json())}`).toBe(201)
      const { ticket } = await json(minted)
      const query = new URLSearchParams({ ...queries[path], ticket })
      const stream = await h.request('GET', `${url}?${query}`)
      expect(stream.status, `${path}: ${stream.status === 200 ? '' : await stream.clone().text()}`).toBe(200)
      expect(stream.headers.get('content-type'), path).toMatch(/^text\/event-stream/)
      const events = await readEvents(stream, (e) => e.length > 0, 10_000)
      expect(events.length, `${path}: something arrives`).toBeGreaterThan(0)
      const again = await h.request('GET', `${url}?${query}`)
      expect([again.status, (await json(again)).error.code], path).toEqual([401, 'auth/invalid-token'])
    }
  })

  it('are not minted for a path that is no stream', async () => {
    for (const path of [`${T}/output`, `${O}/observation/files/read`, '/v1/workspaces', `${T}/follow/extra`]) {
      const refused = await h.request('POST', '/v1/tickets', { token: admin, body: { path } })
      expect([refused.status, (await json(refused)).error.code], path).toEqual([400, 'request/invalid'])
    }
  })
})
