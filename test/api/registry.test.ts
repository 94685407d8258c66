/**
 * Workspace registry and sessions through the in-process API, with the real sidecar
 * canonicalizing paths (docs/architecture.md, "Workspaces and sessions").
 */
import { mkdirSync, realpathSync, symlinkSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from './harness.ts'

let h: Harness
let token: string
let n = 0

beforeAll(async () => {
  h = await startHarness()
  token = await h.token(['workspaces:read', 'workspaces:write', 'sessions:write'])
})
afterAll(async () => {
  await h?.close()
})

function freshDir(name = 'proj'): string {
  const dir = join(h.dir, `d${++n}`, name)
  mkdirSync(dir, { recursive: true })
  return realpathSync(dir)
}

async function call(method: string, path: string, body?: unknown) {
  const response = await h.request(method, path, { token, body })
  return { status: response.status, body: (await response.json()) as any }
}

const create = (path: string, title?: string) => call('POST', '/v1/workspaces', title === undefined ? { path } : { path, title })
const list = async () => (await call('GET', '/v1/workspaces')).body
const eventCount = async () => Number((await h.storage.client.execute('SELECT count(*) FROM registry_events')).rows[0]![0])

describe('create and resolve', () => {
  it('creates over the canonical path, prepends, and returns the existing one for any spelling', async () => {
    const dir = freshDir('alpha')
    const link = join(h.dir, `link${++n}`)
    symlinkSync(dir, link)
    const first = await create(`${dir}/./`)
    expect(first.status).toBe(201)
    expect(first.body).toMatchObject({ created: true, workspace: { path: dir, title: 'alpha', sessionIds: [] } })
    const again = await create(link)
    expect(again.status).toBe(200)
    expect(again.body).toEqual({ created: false, workspace: first.body.workspace })
    const other = await create(freshDir('beta'))
    const order = (await list()).workspaces.map((w: any) => w.id)
    expect(order.slice(0, 2)).toEqual([other.body.workspace.id, first.body.workspace.id])
  })

  it('refuses missing, relative and non-directory paths with a typed 400 and changes nothing', async () => {
    const file = join(freshDir(), 'file.txt')
    writeFileSync(file, 'x')
    const before = await list()
    for (const path of [join(h.dir, 'does-not-exist'), 'relative/dir', file]) {
      const r = await create(path)
      expect(r.status, path).toBe(400)
      expect(r.body.error.code, path).toBe('workspace/invalid-path')
    }
    expect(await list()).toEqual(before)
  })

  it('gives a unique default title when the last segment is taken, and refuses a taken explicit title', async () => {
    const a = await create(freshDir('same'))
    const b = await create(freshDir('same'))
    expect(a.body.workspace.title).toBe('same')
    expect(b.body.workspace.title).toBe('same (2)')
    const c = await create(freshDir('other'), 'same')
    expect(c.status).toBe(409)
    expect(c.body.error).toMatchObject({ code: 'workspace/name-conflict', name: 'same' })
  })

  it('resolves by path without creating', async () => {
    const dir = freshDir('resolve')
    const before = await eventCount()
    const none = await call('GET', `/v1/workspaces/resolve?path=${encodeURIComponent(dir)}`)
    expect(none).toEqual({ status: 200, body: { workspace: null } })
    expect(await eventCount()).toBe(before)
    const made = await create(dir)
    const found = await call('GET', `/v1/workspaces/resolve?path=${encodeURIComponent(`${dir}/`)}`)
    expect(found.body.workspace).toEqual(made.body.workspace)
    const missing = await call('GET', `/v1/workspaces/resolve?path=${encodeURIComponent(`${dir}/nope`)}`)
    expect(missing.status).toBe(400)
  })
})

describe('rename, delete, move', () => {
  it('renames trimmed and unique; blank is a 400; unknown is a 404', async () => {
    const a = (await create(freshDir('r1'))).body.workspace
    const b = (await create(freshDir('r2'))).body.workspace
    const renamed = await call('PATCH', `/v1/workspaces/${a.id}`, { title: '  Renamed One  ' })
    expect(renamed.status).toBe(200)
    expect(renamed.body.workspace.title).toBe('Renamed One')
    expect((await call('PATCH', `/v1/workspaces/${b.id}`, { title: 'Renamed One' })).body.error.code).toBe('workspace/name-conflict')
    expect((await call('PATCH', `/v1/workspaces/${b.id}`, { title: '   ' })).status).toBe(400)
    expect((await call('PATCH', `/v1/workspaces/ws_unknown`, { title: 'x' })).body.error.code).toBe('workspace/not-found')
    // Renaming to its own title is fine.
    expect((await call('PATCH', `/v1/workspaces/${a.id}`, { title: 'Renamed One' })).status).toBe(200)
  })

  it('deletes the registration only: the directory and the sessions stay', async () => {
    const dir = freshDir('gone')
    const ws = (await create(dir)).body.workspace
    const session = await call('POST', '/v1/sessions', { cwd: dir })
    expect(session.body.session.workspaceId).toBe(ws.id)
    expect(await call('DELETE', `/v1/workspaces/${ws.id}`)).toEqual({ status: 200, body: { deleted: true } })
    expect(existsSync(dir)).toBe(true)
    expect((await call('DELETE', `/v1/workspaces/${ws.id}`)).status).toBe(404)
    const after = await call('GET', `/v1/sessions/${session.body.session.id}`)
    expect(after.body.session).toMatchObject({ cwd: dir, workspaceId: null })
    // Registering the directory again adopts the recorded session.
    const again = (await create(dir)).body.workspace
    expect(again.id).not.toBe(ws.id)
    expect(again.sessionIds).toEqual([session.body.session.id])
  })

  it('moves before an anchor or to the end and returns the full order', async () => {
    const ids = []
    for (const name of ['m1', 'm2', 'm3']) ids.push((await create(freshDir(name))).body.workspace.id)
    const [m1, m2, m3] = ids
    const start = (await list()).workspaces.map((w: any) => w.id)
    expect(start.slice(0, 3)).toEqual([m3, m2, m1])
    const moved = await call('POST', `/v1/workspaces/${m1}/move`, { beforeId: m3 })
    expect(moved.body.workspaceIds.slice(0, 3)).toEqual([m1, m3, m2])
    const end = await call('POST', `/v1/workspaces/${m1}/move`, {})
    expect(end.body.workspaceIds.at(-1)).toBe(m1)
    expect((await list()).workspaces.map((w: any) => w.id)).toEqual(end.body.workspaceIds)
    const bad = await call('POST', `/v1/workspaces/${m1}/move`, { beforeId: 'ws_nope' })
    expect(bad.status).toBe(400)
    expect(bad.body.error.code).toBe('workspace/move-invalid')
    expect((await call('POST', `/v1/workspaces/ws_nope/move`, {})).status).toBe(404)
  })
})

describe('sessions', () => {
  it('joins the workspace owning the canonical cwd, newest first; no owner leaves it unlisted', async () => {
    const dir = freshDir('sess')
    const ws = (await create(dir)).body.workspace
    const link = join(h.dir, `slink${++n}`)
    symlinkSync(dir, link)
    const s1 = await call('POST', '/v1/sessions', { id: `s1-${n}`, cwd: dir, title: 'one' })
    const s2 = await call('POST', '/v1/sessions', { id: `s2-${n}`, cwd: link })
    expect(s1.status).toBe(201)
    expect(s2.body.session).toMatchObject({ cwd: dir, workspaceId: ws.id, archived: false })
    const listed = (await list()).workspaces.find((w: any) => w.id === ws.id)
    expect(listed.sessionIds).toEqual([`s2-${n}`, `s1-${n}`])
    const lone = await call('POST', '/v1/sessions', { cwd: freshDir('lonely') })
    expect(lone.body.session.workspaceId).toBeNull()
    expect(lone.body.session.id).toMatch(/^[\w-]{1,128}$/)
  })

  it('is idempotent for the same id and cwd, a conflict for another cwd', async () => {
    const dir = freshDir('idem')
    const first = await call('POST', '/v1/sessions', { id: `idem-${n}`, cwd: dir })
    const again = await call('POST', '/v1/sessions', { id: `idem-${n}`, cwd: `${dir}/` })
    expect(again).toEqual({ status: 200, body: { created: false, session: first.body.session } })
    const other = await call('POST', '/v1/sessions', { id: `idem-${n}`, cwd: freshDir('else') })
    expect(other.status).toBe(409)
    expect(other.body.error.code).toBe('session/conflict')
  })

  it('reorders sessions within a workspace', async () => {
    const dir = freshDir('order')
    const ws = (await create(dir)).body.workspace
    const ids = [`o1-${n}`, `o2-${n}`, `o3-${n}`]
    for (const id of ids) await call('POST', '/v1/sessions', { id, cwd: dir })
    const moved = await call('POST', `/v1/workspaces/${ws.id}/sessions/${ids[2]}/move`, {})
    expect(moved.body.workspace.sessionIds).toEqual([ids[1], ids[0], ids[2]])
    const before = await call('POST', `/v1/workspaces/${ws.id}/sessions/${ids[2]}/move`, { beforeId: ids[1] })
    expect(before.body.workspace.sessionIds).toEqual([ids[2], ids[1], ids[0]])
    const outsider = (await call('POST', '/v1/sessions', { cwd: freshDir('outside') })).body.session.id
    const bad = await call('POST', `/v1/workspaces/${ws.id}/sessions/${outsider}/move`, {})
    expect(bad.body.error.code).toBe('workspace/move-invalid')
    expect((await call('POST', `/v1/workspaces/${ws.id}/sessions/${ids[0]}/move`, { beforeId: outsider })).status).toBe(400)
  })

  it('archives and unarchives; the slot and position survive; repeats change nothing', async () => {
    const dir = freshDir('arch')
    const ws = (await create(dir)).body.workspace
    const ids = [`a1-${n}`, `a2-${n}`, `a3-${n}`]
    for (const id of ids) await call('POST', '/v1/sessions', { id, cwd: dir })
    const archived = await call('POST', `/v1/sessions/${ids[1]}/archive`)
    expect(archived.body.archivedSessionIds).toContain(ids[1])
    const events = await eventCount()
    expect((await call('POST', `/v1/sessions/${ids[1]}/archive`)).status).toBe(200)
    expect(await eventCount()).toBe(events)
    expect((await call('GET', `/v1/sessions/${ids[1]}`)).body.session.archived).toBe(true)
    await call('POST', `/v1/workspaces/${ws.id}/sessions/${ids[0]}/move`, {})
    const restored = await call('DELETE', `/v1/sessions/${ids[1]}/archive`)
    expect(restored.body.archivedSessionIds).not.toContain(ids[1])
    const members = (await list()).workspaces.find((w: any) => w.id === ws.id).sessionIds
    expect(members).toEqual([ids[2], ids[1], ids[0]])
    expect((await call('DELETE', `/v1/sessions/${ids[1]}/archive`)).status).toBe(200)
    expect((await call('POST', '/v1/sessions/no-such-session/archive')).body.error.code).toBe('session/not-found')
    expect((await call('DELETE', '/v1/sessions/no-such-session/archive')).status).toBe(404)
  })
})

describe('concurrent mutations', () => {
  it('serializes: one workspace per directory, unique titles, a consistent order and event log', async () => {
    const dir = freshDir('race')
    const results = await Promise.all(Array.from({ length: 12 }, () => create(dir)))
    expect(results.filter((r) => r.body.created).length).toBe(1)
    expect(new Set(results.map((r) => r.body.workspace.id)).size).toBe(1)

    const dirs = Array.from({ length: 10 }, (_, i) => freshDir(`many${i}`))
    const made = await Promise.all(dirs.map((d) => create(d)))
    expect(made.every((r) => r.status === 201)).toBe(true)

    const [x, y] = [made[0]!.body.workspace.id, made[1]!.body.workspace.id]
    const renames = await Promise.all([x, y, x, y].map((id) => call('PATCH', `/v1/workspaces/${id}`, { title: `contested-${n}` })))
    expect(renames.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1)
    const holders = (await list()).workspaces.filter((w: any) => w.title === `contested-${n}`)
    expect(holders.length).toBe(1)
    for (const r of renames) if (r.status !== 200) expect(r.body.error.code).toBe('workspace/name-conflict')

    const moves = await Promise.all(
      made.map((r, i) => call('POST', `/v1/workspaces/${r.body.workspace.id}/move`, i % 2 ? {} : { beforeId: x })),
    )
    expect(moves.every((r) => r.status === 200)).toBe(true)
    const final = (await list()).workspaces.map((w: any) => w.id)
    expect(new Set(final).size).toBe(final.length)
    // The last order event equals the final order.
    const { rows } = await h.storage.client.execute("SELECT payload FROM registry_events WHERE kind = 'order' ORDER BY seq DESC LIMIT 1")
    expect(JSON.parse(String(rows[0]![0])).workspaceIds).toEqual(final)
  })

  it('two app instances on one database see and serialize each other', async () => {
    const second = await h.secondApp()
    try {
      const dir = freshDir('shared')
      const [a, b] = await Promise.all([
        h.request('POST', '/v1/workspaces', { token, body: { path: dir } }),
        second.app.request('/v1/workspaces', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ path: dir }),
        }),
      ])
      const bodies = [(await a.json()) as any, (await b.json()) as any]
      expect(bodies.filter((x) => x.created).length).toBe(1)
      expect(bodies[0].workspace.id).toBe(bodies[1].workspace.id)
      const seen = await second.app.request('/v1/workspaces', { headers: { authorization: `Bearer ${token}` } })
      expect(((await seen.json()) as any).workspaces.map((w: any) => w.id)).toEqual((await list()).workspaces.map((w: any) => w.id))
    } finally {
      second.close()
    }
  })
})

describe('listing sessions (GET /v1/sessions)', () => {
  it('lists every session newest first, with its workspace, and filters to those in none', async () => {
    const owned = freshDir('owned')
    const alone = freshDir('alone')
    const workspace = (await create(owned)).body.workspace
    const a = (await call('POST', '/v1/sessions', { id: 'list-a', cwd: owned })).body.session
    const b = (await call('POST', '/v1/sessions', { id: 'list-b', cwd: alone, title: 'standalone' })).body.session
    await call('POST', '/v1/sessions/list-b/archive')
    const all = (await call('GET', '/v1/sessions')).body
    const ids = all.sessions.map((s: any) => s.id)
    expect(ids).toContain('list-a')
    expect(ids).toContain('list-b')
    const createdAt = all.sessions.map((s: any) => s.createdAt)
    expect(createdAt).toEqual([...createdAt].sort((x: number, y: number) => y - x))
    expect(all.sessions.find((s: any) => s.id === 'list-a')).toEqual({ ...a, workspaceId: workspace.id })
    expect(all.sessions.find((s: any) => s.id === 'list-b')).toEqual({ ...b, archived: true })
    const standalone = (await call('GET', '/v1/sessions?workspace=none')).body.sessions.map((s: any) => s.id)
    expect(standalone).toContain('list-b')
    expect(standalone).not.toContain('list-a')
    expect((await call('GET', `/v1/sessions?workspace=${workspace.id}`)).body.sessions.map((s: any) => s.id)).toEqual(['list-a'])
    // A session whose workspace was unregistered stands alone again.
    await call('DELETE', `/v1/workspaces/${workspace.id}`)
    expect((await call('GET', '/v1/sessions?workspace=none')).body.sessions.map((s: any) => s.id)).toContain('list-a')
  })

  it('pages with the cursor it hands out, each session exactly once', async () => {
    const dir = freshDir('paged')
    for (let i = 0; i < 7; i++) await call('POST', '/v1/sessions', { id: `page-${i}`, cwd: dir })
    const all = (await call('GET', '/v1/sessions')).body.sessions.map((s: any) => s.id)
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: any = (await call('GET', `/v1/sessions?limit=3${cursor ? `&cursor=${cursor}` : ''}`)).body
      expect(page.sessions.length).toBeLessThanOrEqual(3)
      seen.push(...page.sessions.map((s: any) => s.id))
      cursor = page.next
    } while (cursor)
    expect(seen).toEqual(all)
  })

  it('shows a session-bound token only its own sessions, and refuses bad queries with a typed 400', async () => {
    const dir = freshDir('scoped')
    for (const id of ['scope-mine', 'scope-theirs']) await call('POST', '/v1/sessions', { id, cwd: dir })
    const scoped = await h.token(['workspaces:read'], ['scope-mine', 'scope-ghost'])
    const response = await h.request('GET', '/v1/sessions', { token: scoped })
    expect(((await response.json()) as any).sessions.map((s: any) => s.id)).toEqual(['scope-mine'])
    for (const query of ['limit=0', 'limit=501', 'limit=x', 'cursor=nope', 'workspace=a%20b']) {
      const bad = await call('GET', `/v1/sessions?${query}`)
      expect(bad.status, query).toBe(400)
      expect(bad.body.error.code, query).toBe('request/invalid')
    }
  })
})
