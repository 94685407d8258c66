/**
 * The authorization matrix: every mounted route of the design table × {no token, bad token,
 * missing grant, other session's resource}. Each is refused with the right status and code,
 * a foreign session answers exactly like a missing one, and no refused request changes state.
 * Plus: the confinement of a session-bound token on workspace routes, token management and
 * EventSource tickets. The host dimension (a token bound to a session on one host against another
 * host's sessions, hosts and workspaces) runs across two real hosts in test/hosts/surface.test.ts.
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashSecret } from '../../common/crypto.ts'
import { createToken } from '../../storage/tokens.ts'
import { GRANTS, type Grant } from '../../schema/grants.ts'
import { readEvents, startHarness, type Harness } from './harness.ts'
import { ROUTES, type RouteRow } from './route-table.ts'

let h: Harness
let dir: string
let wid: string
let tokenId: string

const TABLES = [
  'workspaces',
  'sessions',
  'workspace_sessions',
  'archived_sessions',
  'registry_events',
  'tokens',
  'token_grants',
  'token_sessions',
  'token_observe_env',
  'stream_tickets',
  'terminals',
  'attachments',
  'tool_results',
  'workflow_runs',
  'workflow_events',
]

async function snapshot(): Promise<string> {
  const parts: unknown[] = []
  for (const table of TABLES) parts.push((await h.storage.client.execute(`SELECT * FROM ${table} ORDER BY rowid`)).rows)
  return JSON.stringify(parts)
}

beforeAll(async () => {
  h = await startHarness()
  dir = join(h.dir, 'ws', 'mine')
  mkdirSync(dir, { recursive: true })
  dir = realpathSync(dir)
  const admin = await h.token(GRANTS)
  const created = (await (await h.request('POST', '/v1/workspaces', { token: admin, body: { path: dir } })).json()) as any
  wid = created.workspace.id
  for (const id of ['mine', 'theirs']) await h.request('POST', '/v1/sessions', { token: admin, body: { id, cwd: dir } })
  tokenId = (await createToken(h.storage.db, { name: 'victim', grants: ['workspaces:read'], sessions: 'all' })).token.id
})
afterAll(async () => {
  await h?.close()
})

function concrete(path: string, sid: string): string {
  return path.replace(':sid', sid).replace(':tid', 't1').replace(':wid', wid).replace(':id', tokenId).replace(':rid', 'wf_r1')
}

/** A body that would succeed (and change state) if the guard let it through. */
function bodyFor(row: RouteRow): unknown {
  if (row.method === 'GET' || row.method === 'DELETE') return undefined
  if (row.path === '/v1/workspaces') return { path: join(h.dir) }
  if (row.path === '/v1/sessions') return { id: 'theirs', cwd: dir }
  if (row.path.endsWith('/input')) return 'ls\r'
  if (row.path.endsWith('/resize')) return { cols: 100, rows: 30 }
  if (row.method === 'PUT') return { cols: 80, rows: 24 }
  if (row.method === 'PATCH') return { title: 'changed' }
  if (row.path === '/v1/tokens') return { name: 'x', grants: ['admin'], sessions: 'all' }
  if (row.path === '/v1/tickets') return { path: '/v1/workspaces/watch' }
  if (row.path.endsWith('/workflows')) return { script: 'return 1' }
  return {}
}

function lacking(grant: RouteRow['grant']): Grant[][] {
  if (grant === null) return []
  if (typeof grant === 'string') return [[grant]]
  if ('anyOf' in grant) return [[...grant.anyOf]]
  return grant.allOf.map((g) => [g])
}

const mounted = (row: RouteRow) => h.app.routes.some((r) => r.method === row.method && r.path === row.path)

async function refused(row: RouteRow, sid: string, token: string | undefined, headers: Record<string, string> = {}) {
  const before = await snapshot()
  const response = await h.request(row.method, concrete(row.path, sid), {
    token,
    body: bodyFor(row),
    headers: { ...headers, 'termkeep-attachment': 'a1' },
  })
  const body = (await response.json()) as any
  expect(await snapshot(), `${row.method} ${row.path} changed state`).toBe(before)
  return { status: response.status, body, challenge: response.headers.get('www-authenticate') }
}

describe.each(ROUTES.filter((r) => r.grant !== null))('$method $path', (row) => {
  it('is mounted', () => expect(mounted(row), `${row.method} ${row.path} (${row.home})`).toBe(true))

  it('is refused without a token (401), with a bad token (401), and without its grant (403)', async () => {
    // RFC 6750 §3: every 401 challenges for a bearer token; one that was sent and is wrong says so.
    const none = await refused(row, 'mine', undefined)
    expect(none.status).toBe(401)
    expect(none.body.error.code).toBe('auth/missing-token')
    expect(none.challenge).toBe('Bearer realm="termkeep"')
    const bad = await refused(row, 'mine', 'tk_not-a-real-token')
    expect(bad.status).toBe(401)
    expect(bad.body.error.code).toBe('auth/invalid-token')
    expect(bad.challenge).toBe(
      'Bearer realm="termkeep", error="invalid_token", error_description="the token is unknown, revoked or expired"',
    )
    const malformed = await refused(row, 'mine', undefined, { authorization: 'Basic abc' })
    expect([malformed.status, malformed.challenge]).toEqual([401, 'Bearer realm="termkeep"'])
    const unparsable = await refused(row, 'mine', undefined, { authorization: 'Bearer two words' })
    expect([unparsable.status, unparsable.body.error.code]).toEqual([401, 'auth/invalid-token'])
    expect(unparsable.challenge).toMatch(/^Bearer realm="termkeep", error="invalid_token", error_description="[^"\\]*"$/)
    for (const missing of lacking(row.grant)) {
      const token = await h.token(GRANTS.filter((g) => !missing.includes(g)))
      const forbidden = await refused(row, 'mine', token)
      expect(forbidden.status, `without ${missing.join(',')}`).toBe(403)
      expect(forbidden.body.error.code).toBe('auth/forbidden')
      // Not an OAuth step-up: clients read a 403 with a challenge as "ask for more scope".
      expect(forbidden.challenge).toBeNull()
    }
  })
})

// Only routes that name a session can leak one; the others have no such case to run.
describe.each(ROUTES.filter((r) => r.grant !== null && (r.path.includes(':sid') || (r.path === '/v1/sessions' && r.method === 'POST'))))(
  '$method $path',
  (row) => {
    it("answers another session's resource exactly like a missing one (404), changing nothing", async () => {
      const scoped = await h.token(GRANTS, ['mine'])
      if (row.path === '/v1/sessions') {
        const other = await refused(row, 'mine', scoped)
        expect(other.status).toBe(404)
        expect(other.body.error.code).toBe('session/not-found')
        return
      }
      const foreign = await refused(row, 'theirs', scoped)
      const missing = await refused(row, 'ghost', scoped)
      expect(foreign.status).toBe(404)
      expect(foreign.body.error.code).toBe('session/not-found')
      expect(JSON.stringify(foreign.body).replaceAll('theirs', 'X')).toBe(JSON.stringify(missing.body).replaceAll('ghost', 'X'))
    })
  },
)

describe('a session-bound token on workspace routes', () => {
  let admin: string
  let reader: string
  let writer: string
  let otherDir: string
  let otherId: string
  let unowned: string
  let file: string
  let missing: string

  beforeAll(async () => {
    admin = await h.token(GRANTS)
    reader = await h.token(['workspaces:read'], ['mine'])
    writer = await h.token(['workspaces:read', 'workspaces:write', 'sessions:write', 'files:read'], ['mine', 'mine2', 'future'])
    const base = join(h.dir, 'ws')
    otherDir = realpathSync((mkdirSync(join(base, 'other'), { recursive: true }), join(base, 'other')))
    unowned = realpathSync((mkdirSync(join(base, 'unowned'), { recursive: true }), join(base, 'unowned')))
    file = join(base, 'file.txt')
    writeFileSync(file, 'not a directory\n')
    missing = join(base, 'missing')
    otherId = ((await (await h.request('POST', '/v1/workspaces', { token: admin, body: { path: otherDir } })).json()) as any).workspace.id
    await h.request('POST', '/v1/sessions', { token: admin, body: { id: 'other1', cwd: otherDir } })
  })

  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const response = await h.request(method, path, { token, body })
    return { status: response.status, body: (await response.json()) as any }
  }
  /** `a` and `b` are the same answer once the names that differ are blanked. */
  const alike = (a: unknown, b: unknown, names: [string, string]) =>
    expect(JSON.stringify(a).replaceAll(names[0], 'X')).toBe(JSON.stringify(b).replaceAll(names[1], 'X'))
  const resolve = (token: string, path: string) => call(token, 'GET', `/v1/workspaces/resolve?path=${encodeURIComponent(path)}`)

  it('lists only the workspaces that list one of its sessions, with only its session ids', async () => {
    const list = await call(reader, 'GET', '/v1/workspaces')
    expect(list.body.workspaces.map((w: any) => [w.id, w.sessionIds])).toEqual([[wid, ['mine']]])
    expect(JSON.stringify(list.body)).not.toContain(otherDir)
  })

  it('resolves only what it can see, and cannot tell a missing directory from an unowned one', async () => {
    expect((await resolve(reader, dir)).body.workspace).toMatchObject({ id: wid, sessionIds: ['mine'] })
    for (const path of [otherDir, unowned, file, missing, '/etc', '/nonexistent/at/all']) {
      expect(await resolve(reader, path), path).toEqual({ status: 200, body: { workspace: null } })
    }
    // A token bound to all sessions that may not register is not told either…
    const allReader = await h.token(['workspaces:read'])
    expect(await resolve(allReader, missing)).toEqual({ status: 200, body: { workspace: null } })
    expect((await resolve(allReader, otherDir)).body.workspace.id).toBe(otherId)
    // …only one that may register (which POST /v1/workspaces would tell anyway).
    expect((await resolve(admin, missing)).body.error).toMatchObject({ code: 'workspace/invalid-path', reason: 'not-found' })
  })

  it('answers a mutation of a workspace it cannot see exactly like one of a missing workspace, changing nothing', async () => {
    const before = await snapshot()
    const ghost = 'ws_ghost0000000000'
    for (const [method, suffix, body] of [
      ['PATCH', '', { title: 'taken over' }],
      ['DELETE', '', undefined],
      ['POST', '/move', {}],
      ['POST', '/sessions/mine/move', {}],
    ] as const) {
      const hidden = await call(writer, method, `/v1/workspaces/${otherId}${suffix}`, body)
      const absent = await call(writer, method, `/v1/workspaces/${ghost}${suffix}`, body)
      expect(hidden.status, `${method} ${suffix}`).toBe(404)
      expect(hidden.body.error.code).toBe('workspace/not-found')
      alike(hidden, absent, [otherId, ghost])
    }
    // Its own workspace cannot be moved before one it cannot see, nor a session before another's.
    const anchor = await call(writer, 'POST', `/v1/workspaces/${wid}/move`, { beforeId: otherId })
    alike(anchor, await call(writer, 'POST', `/v1/workspaces/${wid}/move`, { beforeId: ghost }), [otherId, ghost])
    expect(anchor.body.error.code).toBe('workspace/move-invalid')
    const session = await call(writer, 'POST', `/v1/workspaces/${wid}/sessions/mine/move`, { beforeId: 'theirs' })
    alike(session, await call(writer, 'POST', `/v1/workspaces/${wid}/sessions/mine/move`, { beforeId: 'ghost' }), ['theirs', 'ghost'])
    expect(await snapshot()).toBe(before)
    // What it can see, it may change: the order it gets back holds only what it can see.
    expect((await call(writer, 'POST', `/v1/workspaces/${wid}/move`, {})).body).toEqual({ workspaceIds: [wid] })
  })

  it('watches only what it can see, from the baseline on, and resumes with a new baseline', async () => {
    const stream = await h.request('GET', '/v1/workspaces/watch', { token: reader })
    const reader$ = stream.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    const until = async (done: () => boolean) => {
      while (!done()) {
        const { value, done: ended } = await reader$.read()
        if (ended) break
        text += decoder.decode(value, { stream: true })
      }
    }
    const events = () =>
      text
        .split('\n\n')
        .filter((b) => b.includes('event: '))
        .map((b) => ({ event: /event: (\w+)/.exec(b)![1], id: /id: (\d+)/.exec(b)?.[1], data: JSON.parse(/data: (.*)/.exec(b)![1]) }))
    try {
      await until(() => events().length >= 1)
      const [baseline] = events()
      expect(baseline.event).toBe('baseline')
      expect(baseline.data.workspaces.map((w: any) => w.id)).toEqual([wid])
      // Everything that happens to what it cannot see…
      const fresh = realpathSync((mkdirSync(join(h.dir, 'ws', 'fresh'), { recursive: true }), join(h.dir, 'ws', 'fresh')))
      await call(admin, 'PATCH', `/v1/workspaces/${otherId}`, { title: 'renamed elsewhere' })
      await call(admin, 'POST', `/v1/workspaces/${otherId}/move`, { beforeId: wid })
      await call(admin, 'POST', '/v1/sessions/other1/archive')
      const made = (await call(admin, 'POST', '/v1/workspaces', { path: fresh })).body.workspace
      await call(admin, 'DELETE', `/v1/workspaces/${made.id}`)
      // …then one change to what it can see: the only event it gets.
      await call(admin, 'PATCH', `/v1/workspaces/${wid}`, { title: 'seen' })
      await until(() => events().length >= 2)
      const after = events().slice(1)
      expect(after.map((e) => e.event)).toEqual(['upsert'])
      expect(after[0].data.workspace).toMatchObject({ id: wid, title: 'seen', sessionIds: ['mine'] })
      expect(text).not.toContain(otherId)
      expect(text).not.toContain(made.id)
      expect(text).not.toContain('other1')

      const resumed = await h.request('GET', '/v1/workspaces/watch', { token: reader, headers: { 'last-event-id': after[0].id! } })
      const [first] = (await readEvents(resumed, (e) => e.some((x) => x.event !== ':'))).filter((e) => e.event !== ':')
      expect(first.event).toBe('baseline')
      expect(JSON.parse(first.data).workspaces.map((w: any) => w.id)).toEqual([wid])
    } finally {
      await reader$.cancel()
    }
  })

  it('cannot register a directory: any path it cannot see is the same typed 403', async () => {
    const before = await snapshot()
    const refusals = []
    for (const path of [unowned, missing, file, otherDir, '/etc']) {
      const refused = await call(writer, 'POST', '/v1/workspaces', { path })
      expect(refused.status, path).toBe(403)
      expect(refused.body.error).toMatchObject({ code: 'auth/forbidden', required: 'workspaces:write on a token bound to all sessions' })
      refusals.push([refused, path] as const)
    }
    for (const [refused, path] of refusals.slice(1)) alike(refused, refusals[0][0], [path, refusals[0][1]])
    expect(await snapshot()).toBe(before)
    // The workspace it can see comes back as it is.
    expect(await call(writer, 'POST', '/v1/workspaces', { path: dir })).toMatchObject({
      status: 200,
      body: { created: false, workspace: { id: wid } },
    })
  })

  it('records its session only in a workspace it can see: a session id that does not exist yet opens nothing', async () => {
    // The audit's exploit: bound to a session that does not exist yet, register /etc, record the
    // session there, read /etc/passwd. Each step is refused, and nothing is stored.
    const future = await h.token(['workspaces:write', 'sessions:write', 'files:read'], ['future'])
    const before = await snapshot()
    expect((await call(future, 'POST', '/v1/workspaces', { path: '/etc' })).body.error.code).toBe('auth/forbidden')
    const etc = await call(future, 'POST', '/v1/sessions', { id: 'future', cwd: '/etc' })
    expect(etc.status).toBe(403)
    expect(etc.body.error.code).toBe('auth/forbidden')
    expect((await call(future, 'GET', '/v1/sessions/future/files/text?path=/etc/passwd')).body.error.code).toBe('session/not-found')
    // Nor may it record in a workspace it cannot see, in a directory no workspace owns, or in a
    // missing one: the same refusal each time.
    for (const cwd of [otherDir, unowned, missing])
      alike(await call(writer, 'POST', '/v1/sessions', { id: 'future', cwd }), etc, [cwd, '/etc'])
    expect(await snapshot()).toBe(before)
    // In the directory of a workspace it can see, it records a session of its own.
    const recorded = await call(writer, 'POST', '/v1/sessions', { id: 'mine2', cwd: dir })
    expect(recorded).toMatchObject({ status: 201, body: { session: { id: 'mine2', workspaceId: wid } } })
  })
})

describe('token management', () => {
  it('mints a token whose secret is shown once, lists without secrets, and revokes', async () => {
    const admin = await h.token(['admin'])
    const created = await h.request('POST', '/v1/tokens', {
      token: admin,
      body: { name: 'reader', grants: ['workspaces:read'], sessions: ['mine'] },
    })
    expect(created.status).toBe(201)
    const { token, secret } = (await created.json()) as any
    expect(token).toMatchObject({ name: 'reader', grants: ['workspaces:read'], sessions: ['mine'] })
    expect((await h.request('GET', '/v1/workspaces', { token: secret })).status).toBe(200)
    const listed = await (await h.request('GET', '/v1/tokens', { token: admin })).text()
    expect(listed).toContain(token.id)
    expect(listed).not.toContain(secret)
    // No field that names a secret or a hash, and not the stored hash itself (ids are random
    // base64url, so a substring check on the whole listing could hit "hash" inside an id).
    const fields = (JSON.parse(listed) as { tokens: Record<string, unknown>[] }).tokens.flatMap((t) => Object.keys(t))
    expect(fields.filter((k) => /secret|hash/i.test(k))).toEqual([])
    expect(listed).not.toContain(await hashSecret(secret))
    expect((await h.request('DELETE', `/v1/tokens/${token.id}`, { token: admin })).status).toBe(200)
    expect((await h.request('GET', '/v1/workspaces', { token: secret })).status).toBe(401)
    expect((await h.request('DELETE', `/v1/tokens/${token.id}`, { token: admin })).status).toBe(404)
    expect(await (await h.request('GET', '/v1/tokens', { token: admin })).text()).not.toContain(token.id)
  })

  it('refuses bad token specs with a 400 and stores nothing', async () => {
    const admin = await h.token(['admin'])
    const before = await snapshot()
    for (const body of [
      { name: 'x', grants: ['root'], sessions: 'all' },
      { name: 'x', grants: [], sessions: 'all' },
      { name: ' ', grants: ['admin'], sessions: 'all' },
      { name: 'x', grants: ['admin'], sessions: ['bad id!'] },
      { name: 'x', grants: ['admin'], sessions: 'all', expiresAt: 1 },
    ]) {
      const r = await h.request('POST', '/v1/tokens', { token: admin, body })
      expect(r.status, JSON.stringify(body)).toBe(400)
    }
    expect(await snapshot()).toBe(before)
  })

  it('refuses an expiry beyond an exact integer timestamp, which could never be read back', async () => {
    const admin = await h.token(['admin'])
    const before = await snapshot()
    // biome-ignore lint/correctness/noPrecisionLoss: 2^53 + 1 on purpose: a time no double holds exactly
    for (const expiresAt of [9007199254740993, 1e300, 253402300800000, 1.5e12 + 0.5]) {
      const r = await h.request('POST', '/v1/tokens', {
        token: admin,
        body: { name: 'far', grants: ['workspaces:read'], sessions: 'all', expiresAt },
      })
      expect(r.status, String(expiresAt)).toBe(400)
      expect(((await r.json()) as any).error.code).toBe('request/invalid')
    }
    expect(await snapshot()).toBe(before)
    expect((await h.request('GET', '/v1/tokens', { token: admin })).status).toBe(200)
  })

  it('keeps authority inside a session-bound token: admin is refused on one, and one cannot manage tokens', async () => {
    const admin = await h.token(['admin'])
    const before = await snapshot()
    const bound = await h.request('POST', '/v1/tokens', { token: admin, body: { name: 'x', grants: ['admin'], sessions: ['mine'] } })
    expect(bound.status).toBe(400)
    expect(((await bound.json()) as any).error.message).toContain('sessions "all"')
    expect(await snapshot()).toBe(before)

    // A bound admin token stored earlier (or directly) still cannot step outside its sessions.
    const scopedAdmin = await h.token(['admin', 'workspaces:read'], ['mine'])
    const before2 = await snapshot()
    for (const [method, path, body] of [
      ['POST', '/v1/tokens', { name: 'escape', grants: ['terminals:output'], sessions: 'all' }],
      ['GET', '/v1/tokens', undefined],
      ['DELETE', `/v1/tokens/${tokenId}`, undefined],
    ] as const) {
      const r = await h.request(method, path, { token: scopedAdmin, body })
      expect(r.status, `${method} ${path}`).toBe(403)
      expect(((await r.json()) as any).error.code).toBe('auth/forbidden')
    }
    expect(await snapshot()).toBe(before2)
  })

  it('treats an expired token as invalid, and lists it no more', async () => {
    const { token, secret } = await createToken(h.storage.db, {
      name: 'old',
      grants: ['workspaces:read'],
      sessions: 'all',
      expiresAt: Date.now() - 1,
    })
    expect((await h.request('GET', '/v1/workspaces', { token: secret })).status).toBe(401)
    const listed = await (await h.request('GET', '/v1/tokens', { token: await h.token(['admin']) })).text()
    expect(listed).not.toContain(token.id)
  })
})

describe('EventSource tickets', () => {
  async function mint(token: string, path: string) {
    const r = await h.request('POST', '/v1/tickets', { token, body: { path } })
    return { status: r.status, body: (await r.json()) as any }
  }

  it('opens exactly one stream, once, on the path it was minted for', async () => {
    const reader = await h.token(['workspaces:read'])
    const { status, body } = await mint(reader, '/v1/workspaces/watch')
    expect(status).toBe(201)
    const url = `/v1/workspaces/watch?ticket=${encodeURIComponent(body.ticket)}`
    const stream = await h.request('GET', url)
    expect(stream.status).toBe(200)
    const events = await readEvents(stream, (e) => e.some((x) => x.event === 'baseline'))
    expect(events.some((e) => e.event === 'baseline')).toBe(true)
    const reused = await h.request('GET', url)
    expect(reused.status).toBe(401)
    expect(reused.headers.get('www-authenticate')).toMatch(/^Bearer realm="termkeep", error="invalid_token"/)
    expect(((await reused.json()) as any).error.code).toBe('auth/invalid-token')

    const other = await mint(reader, '/v1/workspaces/watch')
    expect((await h.request('GET', `/v1/workspaces?ticket=${other.body.ticket}`)).status).toBe(401)
    // A failed use on another path does not spend it… and it still works where it belongs.
    const rightful = await h.request('GET', `/v1/workspaces/watch?ticket=${other.body.ticket}`)
    expect(rightful.status).toBe(200)
    await rightful.body?.cancel()
  })

  it('is spent only by a request that passed every check, and by exactly one of two at once', async () => {
    const token = await h.token(GRANTS)
    const follow = '/v1/sessions/mine/terminals/t2/follow'
    const t = await mint(token, follow)
    const refused = await h.request('GET', `${follow}?ticket=${t.body.ticket}`)
    expect([refused.status, ((await refused.json()) as any).error.code]).toEqual([400, 'request/invalid'])
    // Valid now, so it gets past every check and spends the ticket (the sidecar has no t2).
    const passed = await h.request('GET', `${follow}?ticket=${t.body.ticket}&attachment=a`)
    expect([passed.status, ((await passed.json()) as any).error.code]).toEqual([404, 'terminal/not-found'])
    expect((await h.request('GET', `${follow}?ticket=${t.body.ticket}&attachment=a`)).status).toBe(401)

    const watch = '/v1/sessions/mine/terminals/t2/output/watch'
    const w = await mint(token, watch)
    const badResume = await h.request('GET', `${watch}?ticket=${w.body.ticket}`, { headers: { 'last-event-id': 'x' } })
    expect(badResume.status).toBe(400)
    expect((await h.request('GET', `${watch}?ticket=${w.body.ticket}`)).status).toBe(404)
    expect((await h.request('GET', `${watch}?ticket=${w.body.ticket}`)).status).toBe(401)

    const registry = await mint(token, '/v1/workspaces/watch')
    const url = `/v1/workspaces/watch?ticket=${registry.body.ticket}`
    expect((await h.request('GET', url, { headers: { 'last-event-id': '-1' } })).status).toBe(400)
    const racing = await Promise.all([h.request('GET', url), h.request('GET', url)])
    expect(racing.map((r) => r.status).sort()).toEqual([200, 401])
    await Promise.all(racing.map((r) => r.body?.cancel()))
  })

  it("carries only the minting token's authority, dies with it, and expires", async () => {
    const weak = await h.token(['terminals:control'])
    const t = await mint(weak, '/v1/workspaces/watch')
    expect((await h.request('GET', `/v1/workspaces/watch?ticket=${t.body.ticket}`)).status).toBe(403)

    const { token, secret } = await createToken(h.storage.db, { name: 'short', grants: ['workspaces:read'], sessions: 'all' })
    const revokedTicket = await mint(secret, '/v1/workspaces/watch')
    await h.request('DELETE', `/v1/tokens/${token.id}`, { token: await h.token(['admin']) })
    expect((await h.request('GET', `/v1/workspaces/watch?ticket=${revokedTicket.body.ticket}`)).status).toBe(401)

    const reader = await h.token(['workspaces:read'])
    const expiring = await mint(reader, '/v1/workspaces/watch')
    await h.storage.client.execute('UPDATE stream_tickets SET expires_at = 0 WHERE used_at IS NULL')
    expect((await h.request('GET', `/v1/workspaces/watch?ticket=${expiring.body.ticket}`)).status).toBe(401)
  })

  it('is minted only for stream paths, and a long-lived token in the URL is never accepted', async () => {
    const reader = await h.token(['workspaces:read'])
    expect((await mint(reader, '/v1/workspaces')).status).toBe(400)
    expect((await mint(reader, '/v1/workspaces/watch?x=1')).status).toBe(400)
    expect((await h.request('GET', `/v1/workspaces/watch?ticket=${encodeURIComponent(reader)}`)).status).toBe(401)
    expect((await h.request('GET', `/v1/workspaces/watch?token=${encodeURIComponent(reader)}`)).status).toBe(401)
    expect((await h.request('POST', '/v1/tickets', { body: { path: '/v1/workspaces/watch' } })).status).toBe(401)
  })
})
