/**
 * What a person or an agent sees of two hosts (two sidecars, two data directories, one sqld, the
 * Node API): workspaces on a host (the same path on both is two workspaces; sessions go to their
 * workspace's host), the hosts watch seeing a host stop, be killed and come back (and never `up`
 * before it answers), and the authorization matrix's host dimension: a token bound to a session on
 * one host sees and reaches nothing of the other.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deriveHostSecret } from '../../common/crypto.ts'
import { HOST_LEASE_MS } from '../../schema/limits.ts'
import { listHosts } from '../../storage/hosts.ts'
import { hostGenerations } from '../../storage/tables.ts'
import { ROUTES, type RouteRow } from '../api/route-table.ts'
import { runCli } from '../cli/run.ts'
import { EventStream } from '../support/event-stream.ts'
import { callTool, errorOf, factsOf, mcpClient } from '../support/mcp.ts'
import { waitFor } from '../support/ports.ts'
import { startTwoHosts, type HostName, type TwoHosts } from '../support/two-hosts.ts'

let fleet: TwoHosts
let app: string
let solo: string
const ws = {} as Record<HostName, string>
const ses = {} as Record<HostName, string>

function call(method: string, path: string, body?: unknown, token = fleet.token) {
  return fetch(`${fleet.api.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      'termkeep-attachment': 'a1',
      ...(body === undefined ? {} : { 'content-type': typeof body === 'string' ? 'application/octet-stream' : 'application/json' }),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
}
const answer = async (response: Response) => ({ status: response.status, body: (await response.json()) as any })

/** The rows a refused request must leave as they were. */
async function snapshot(): Promise<string> {
  const parts: unknown[] = []
  for (const table of ['workspaces', 'sessions', 'workspace_sessions', 'registry_events', 'terminals']) {
    parts.push((await fleet.storage.client.execute(`SELECT * FROM ${table} ORDER BY rowid`)).rows)
  }
  return JSON.stringify(parts)
}

beforeAll(async () => {
  fleet = await startTwoHosts()
  const base = realpathSync(fleet.hosts.alpha.dataDir)
  app = join(base, 'src', 'app')
  solo = join(base, 'src', 'solo')
  for (const dir of [app, solo]) mkdirSync(dir, { recursive: true })
}, 120_000)

afterAll(async () => {
  await fleet?.stop()
})

describe('workspaces on a host', () => {
  it('keeps a path unique per host: the same directory on two hosts is two workspaces', async () => {
    const ambiguous = await answer(await call('POST', '/v1/workspaces', { path: app }))
    expect([ambiguous.status, ambiguous.body.error.code]).toEqual([409, 'host/ambiguous'])
    for (const name of ['alpha', 'beta'] as const) {
      const created = await answer(await call('POST', '/v1/workspaces', { path: app, host: name }))
      expect(created.status).toBe(201)
      expect(created.body.workspace).toMatchObject({ path: app, host: fleet.hosts[name].id })
      ws[name] = created.body.workspace.id
    }
    expect(ws.alpha).not.toBe(ws.beta)
    // By id too; and the one that exists comes back.
    const again = await answer(await call('POST', '/v1/workspaces', { path: app, host: fleet.hosts.beta.id }))
    expect(again).toMatchObject({ status: 200, body: { created: false, workspace: { id: ws.beta } } })
    const resolved = await answer(await call('GET', `/v1/workspaces/resolve?path=${encodeURIComponent(app)}&host=alpha`))
    expect(resolved.body.workspace.id).toBe(ws.alpha)
    const listed = (await answer(await call('GET', '/v1/workspaces'))).body.workspaces
    expect(listed.map((w: any) => [w.id, w.host]).sort()).toEqual(
      [
        [ws.alpha, fleet.hosts.alpha.id],
        [ws.beta, fleet.hosts.beta.id],
      ].sort(),
    )
  })

  it('refuses a bad or unknown host with a typed error and changes nothing', async () => {
    const before = await snapshot()
    for (const [body, status, code] of [
      [{ path: app, host: 'gamma' }, 400, 'host/unknown'],
      [{ path: app, host: 'not a host!' }, 400, 'request/invalid'],
      [{ path: app, host: 7 }, 400, 'request/invalid'],
    ] as const) {
      const refused = await answer(await call('POST', '/v1/workspaces', body))
      expect([refused.status, refused.body.error.code], JSON.stringify(body)).toEqual([status, code])
    }
    const resolve = await answer(await call('GET', `/v1/workspaces/resolve?path=${encodeURIComponent(app)}&host=gamma`))
    expect([resolve.status, resolve.body.error.code]).toEqual([400, 'host/unknown'])
    expect(await snapshot()).toBe(before)
  })

  it("records a session in a workspace on the workspace's host; a host that contradicts it is 409 host/mismatch", async () => {
    const before = await snapshot()
    const mismatch = await answer(await call('POST', '/v1/sessions', { workspace: ws.beta, host: 'alpha' }))
    expect(mismatch.status).toBe(409)
    expect(mismatch.body.error).toMatchObject({ code: 'host/mismatch', host: 'alpha', workspaceHost: fleet.hosts.beta.id })
    const elsewhere = await answer(await call('POST', '/v1/sessions', { workspace: ws.beta, cwd: solo }))
    expect([elsewhere.status, elsewhere.body.error.code]).toEqual([400, 'workspace/invalid-path'])
    const missing = await answer(await call('POST', '/v1/sessions', { workspace: 'ws_nope' }))
    expect([missing.status, missing.body.error.code]).toEqual([404, 'workspace/not-found'])
    const neither = await answer(await call('POST', '/v1/sessions', { title: 'x' }))
    expect([neither.status, neither.body.error.code]).toEqual([400, 'request/invalid'])
    // Two workspaces have this path: which host is not for the API to guess.
    const ambiguous = await answer(await call('POST', '/v1/sessions', { cwd: app }))
    expect([ambiguous.status, ambiguous.body.error.code]).toEqual([409, 'host/ambiguous'])
    expect(await snapshot()).toBe(before)

    for (const name of ['alpha', 'beta'] as const) {
      const created = await answer(await call('POST', '/v1/sessions', { id: `ses-${name}`, workspace: ws[name], host: name }))
      expect(created.status).toBe(201)
      expect(created.body.session).toMatchObject({ cwd: app, host: fleet.hosts[name].id, workspaceId: ws[name] })
      ses[name] = created.body.session.id
    }
    // A cwd and a host join that host's workspace of the path.
    const byCwd = await answer(await call('POST', '/v1/sessions', { cwd: app, host: 'beta' }))
    expect(byCwd.body.session).toMatchObject({ host: fleet.hosts.beta.id, workspaceId: ws.beta })
    // A cwd alone never picks among hosts, even where only one has a workspace of it.
    await answer(await call('POST', '/v1/workspaces', { path: solo, host: 'beta' }))
    const bySolo = await answer(await call('POST', '/v1/sessions', { cwd: solo }))
    expect([bySolo.status, bySolo.body.error.code]).toEqual([409, 'host/ambiguous'])
    // Its terminal runs on beta: each sidecar gives its programs a HOME in its data directory.
    const put = await call('PUT', `/v1/sessions/${ses.beta}/terminals/t1`, {
      cols: 80,
      rows: 24,
      command: 'echo home:$HOME; exec sleep 300',
    })
    expect(put.status).toBe(201)
    await waitFor(
      async () =>
        (await (await call('GET', `/v1/sessions/${ses.beta}/terminals/t1/screen`)).text()).includes(`home:${fleet.hosts.beta.dataDir}`),
      15_000,
      "beta's terminal",
    )
    // Its row settles too: the sidecar records the foreground program as it changes (bash, then the
    // sleep it execs), which would otherwise move the row under the matrices' "changes nothing".
    await waitFor(
      async () => (await answer(await call('GET', `/v1/sessions/${ses.beta}/terminals/t1`))).body.foregroundCommand === 'sleep',
      15_000,
      "beta's program",
    )
  })

  it('gives a workspace recorded before workspaces had hosts to the first host a request names it on', async () => {
    const dir = join(app, '..', 'old')
    mkdirSync(dir, { recursive: true })
    const made = (await answer(await call('POST', '/v1/workspaces', { path: dir, host: 'alpha' }))).body.workspace
    await fleet.storage.client.execute({ sql: 'UPDATE workspaces SET host_id = NULL WHERE id = ?', args: [made.id] })
    const claimed = await answer(await call('POST', '/v1/workspaces', { path: dir, host: 'beta' }))
    expect(claimed).toMatchObject({ status: 200, body: { created: false, workspace: { id: made.id, host: fleet.hosts.beta.id } } })
    const again = await answer(await call('POST', '/v1/workspaces', { path: dir, host: 'alpha' }))
    expect(again.status).toBe(201)
    expect(again.body.workspace.id).not.toBe(made.id)
  })

  it('termkeep workspace add --host, workspace ls naming hosts, and MCP add_workspace with a host', async () => {
    const env = { TERMKEEP_URL: fleet.api.url, TERMKEEP_TOKEN: fleet.token }
    const dir = join(app, '..', 'cli')
    mkdirSync(dir, { recursive: true })
    const added = await runCli(['workspace', 'add', dir, '--host', 'beta', '--json'], env)
    expect(added.code, added.stderr).toBe(0)
    expect(JSON.parse(added.stdout).workspace.host).toBe(fleet.hosts.beta.id)
    const listed = await runCli(['workspace', 'ls'], env)
    expect(listed.stdout).toMatch(/^app .* on alpha /m)
    expect(listed.stdout).toMatch(/^cli .* on beta /m)
    const client = await mcpClient(fleet.api.url, fleet.token)
    try {
      const made = factsOf(await callTool(client, 'add_workspace', { path: dir, host: 'alpha' }))
      expect(made.workspace.host).toBe(fleet.hosts.alpha.id)
      expect(errorOf(await callTool(client, 'add_workspace', { path: dir })).code).toBe('host/ambiguous')
      const session = factsOf(await callTool(client, 'create_session', { workspace: made.workspace.id }))
      expect(session.session.host).toBe(fleet.hosts.alpha.id)
    } finally {
      await client.close()
    }
  }, 60_000)
})

/** The body that would succeed (and change state) were the request let through. */
function bodyFor(row: RouteRow): unknown {
  if (row.method === 'GET' || row.method === 'DELETE') return undefined
  if (row.path.endsWith('/input')) return 'ls\r'
  if (row.path.endsWith('/resize')) return { cols: 100, rows: 30 }
  if (row.method === 'PUT') return { cols: 80, rows: 24 }
  if (row.method === 'PATCH') return { title: 'changed' }
  if (row.path.endsWith('/workflows')) return { script: 'return 1' }
  return {}
}

describe("the authorization matrix across hosts: a token bound to a session on alpha and beta's", () => {
  it("answers every session route of beta's session exactly like a missing session's, changing nothing", async () => {
    const bound = await fleet.boundToken([ses.alpha])
    const before = await snapshot()
    const rows = ROUTES.filter((r) => r.grant !== null && r.path.includes(':sid'))
    expect(rows.length).toBeGreaterThan(50)
    for (const row of rows) {
      const path = (sid: string) => row.path.replace(':sid', sid).replace(':tid', 't1').replace(':wid', ws.beta).replace(':rid', 'wf_r1')
      const foreign = await answer(await call(row.method, path(ses.beta), bodyFor(row), bound))
      const missing = await answer(await call(row.method, path('ghost'), bodyFor(row), bound))
      expect(foreign.status, `${row.method} ${row.path}`).toBe(404)
      expect(JSON.stringify(foreign.body).replaceAll(ses.beta, 'X')).toBe(JSON.stringify(missing.body).replaceAll('ghost', 'X'))
    }
    expect(await snapshot()).toBe(before)
  }, 60_000)

  it('sees only alpha: hosts, the hosts watch, workspaces, sessions; naming beta is naming no host', async () => {
    const bound = await fleet.boundToken([ses.alpha])
    expect((await answer(await call('GET', '/v1/hosts', undefined, bound))).body.hosts.map((h: any) => h.name)).toEqual(['alpha'])
    const watch = new EventStream(await call('GET', '/v1/hosts/watch', undefined, bound))
    try {
      const baseline = await watch.until((e) => e.event === 'baseline')
      expect(baseline.data.hosts.map((h: any) => h.name)).toEqual(['alpha'])
    } finally {
      await watch.close()
    }
    const workspaces = (await answer(await call('GET', '/v1/workspaces', undefined, bound))).body.workspaces
    expect(workspaces.map((w: any) => w.id)).toEqual([ws.alpha])
    const sessions = (await answer(await call('GET', '/v1/sessions', undefined, bound))).body.sessions
    expect(sessions.map((s: any) => s.id)).toEqual([ses.alpha])
    const before = await snapshot()
    for (const [method, path, body] of [
      ['POST', '/v1/workspaces', { path: app, host: 'HOST' }],
      ['GET', `/v1/workspaces/resolve?path=${encodeURIComponent(app)}&host=HOST`, undefined],
      ['POST', '/v1/sessions', { id: ses.alpha, cwd: app, host: 'HOST' }],
    ] as const) {
      const ask = (host: string) =>
        call(method, path.replace('HOST', host), JSON.parse(JSON.stringify(body ?? null).replace('HOST', host)) ?? undefined, bound)
      const beta = await answer(await ask('beta'))
      const nowhere = await answer(await ask('nowhere'))
      expect([beta.status, beta.body.error?.code], `${method} ${path}`).toEqual([400, 'host/unknown'])
      expect(JSON.stringify(beta.body).replaceAll('beta', 'X')).toBe(JSON.stringify(nowhere.body).replaceAll('nowhere', 'X'))
    }
    // Beta's workspace, by id, is as missing as a workspace that does not exist.
    const byId = await answer(await call('POST', '/v1/sessions', { id: ses.alpha, workspace: ws.beta }, bound))
    expect([byId.status, byId.body.error.code]).toEqual([404, 'workspace/not-found'])
    expect(await snapshot()).toBe(before)
  })
})

describe('the hosts watch', () => {
  let watch: EventStream
  const hostEvent = (name: HostName, change: string) => (e: { event: string; data: any }) =>
    e.event === 'upsert' && e.data.host.name === name && e.data.change === change

  beforeAll(async () => {
    watch = new EventStream(await call('GET', '/v1/hosts/watch'))
  })
  afterAll(async () => {
    await watch?.close()
  })

  it('starts with every host, up', async () => {
    const baseline = await watch.until((e) => e.event === 'baseline')
    expect(baseline.data.hosts.map((h: any) => [h.name, h.up, h.starting, h.downSince])).toEqual([
      ['alpha', true, false, null],
      ['beta', true, false, null],
    ])
  })

  it('tells a host stopped cleanly as down at once, since its stop, and the other host not at all', async () => {
    const from = watch.events.length
    const stoppedAt = Date.now()
    await fleet.hosts.beta.sidecar.stop({ terminals: 'keep' })
    const down = await watch.until(hostEvent('beta', 'down'), from, 5_000, 'beta down')
    expect(down.data.host).toMatchObject({ id: fleet.hosts.beta.id, up: false, starting: false })
    expect(down.data.host.downSince).toBeGreaterThanOrEqual(stoppedAt)
    expect(watch.events.slice(from).filter((e) => e.data.host?.name === 'alpha')).toEqual([])
  })

  it('tells it up again only once its sidecar answers: a host starting is listed `starting`, never `up` before it serves', async () => {
    const from = watch.events.length
    const restarting = fleet.restart('beta', { slow: true })
    const secret = await deriveHostSecret(fleet.fleetSecret, fleet.hosts.beta.id)
    const seen: string[] = []
    let done = false
    void restarting.finally(() => (done = true))
    // While it starts: whenever the database lists it up, its sidecar answers.
    while (!done) {
      const beta = (await listHosts(fleet.storage.db)).find((h) => h.name === 'beta')!
      seen.push(beta.up ? 'up' : beta.starting ? 'starting' : 'down')
      if (beta.up) {
        const asked = await fetch(`${beta.url}/v1/sessions/${ses.beta}/terminals/t1`, { headers: { authorization: `Bearer ${secret}` } })
        expect(asked.status, await asked.clone().text()).toBe(200)
      }
      await new Promise((r) => setTimeout(r, 25))
    }
    await restarting
    expect(seen).toContain('starting')
    const up = await watch.until(hostEvent('beta', 'up'), from, 5_000, 'beta up')
    expect(up.data.host).toMatchObject({ up: true, starting: false, downSince: null })
    // The watch saw it starting first (a change that is not yet `up`).
    const starting = watch.events.slice(from).findIndex((e) => e.event === 'upsert' && e.data.host.starting)
    expect(starting).toBeGreaterThanOrEqual(0)
    expect(starting).toBeLessThan(watch.events.slice(from).indexOf(up))
    // Its terminal lived on in its keeper, and live calls reach it again.
    expect((await answer(await call('GET', `/v1/sessions/${ses.beta}/terminals/t1`))).body.state).toBe('running')
  }, 60_000)

  it('tells a host whose sidecar was killed (kill -9) as down once its heartbeat is as old as the lease', async () => {
    const from = watch.events.length
    const { generation } = fleet.hosts.beta.sidecar
    await fleet.hosts.beta.sidecar.kill()
    // Killed, it cannot say so: until the lease runs out it is still listed up.
    const [listed] = (await listHosts(fleet.storage.db)).filter((h) => h.name === 'beta')
    expect(listed.up).toBe(true)
    // The lease running out, made so rather than waited for (HOST_LEASE_MS is 30 s).
    const lastBeat = Date.now() - HOST_LEASE_MS
    await fleet.storage.db.update(hostGenerations).set({ heartbeatAt: lastBeat }).where(eq(hostGenerations.generation, generation))
    const down = await watch.until(hostEvent('beta', 'down'), from, 5_000, 'beta down after kill -9')
    expect(down.data.host).toMatchObject({ up: false, starting: false, downSince: lastBeat })
    const live = await answer(await call('GET', `/v1/sessions/${ses.beta}/terminals/t1/output?after=0`))
    expect([live.status, live.body.error.code, live.body.error.hostName]).toEqual([503, 'host/unavailable', 'beta'])
    // Alpha never changed.
    expect(watch.events.slice(from).filter((e) => e.data.host?.name === 'alpha')).toEqual([])
  }, 60_000)
})
