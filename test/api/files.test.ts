/**
 * Workspace files and Files.readText end to end: the API (createApp, real guard and tokens) in
 * front of the real sidecar process, both on one libSQL file. Sessions and workspaces are
 * inserted directly with drizzle.
 */
import { appendFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../api/app.ts'
import { createToken, revokeToken } from '../../storage/tokens.ts'
import type { AppEnv } from '../../api/deps.ts'
import { SidecarClient } from '../../api/sidecar-client.ts'
import { MAX_FILE_PAGE_LINES, MAX_SKIPPED_LINE_BYTES } from '../../schema/limits.ts'
import { sessions, workspaces, workspaceSessions } from '../../storage/tables.ts'
import type { Grant } from '../../schema/grants.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { sessionWorkspace } from '../../storage/bindings.ts'
import { readSse, type SseReader } from '../smoke/sse.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'

let dir: string
let root: string
let root2: string
let sidecar: RunningSidecar
let storage: Storage
let app: Hono<AppEnv>
let reader: string // files:read on every session
let writer: string // sessions:write
let onlyS2: string // files:read, scoped to s2
let noGrant: string // terminals:control only

async function token(grants: Grant[], scope: 'all' | string[] = 'all'): Promise<string> {
  return (await createToken(storage.db, { name: 'files-test', grants, sessions: scope })).secret
}

function call(method: string, path: string, secret: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
  const headers = new Headers({ authorization: `Bearer ${secret}` })
  if (body !== undefined) headers.set('content-type', 'application/json')
  return Promise.resolve(app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal }))
}

async function get(path: string, secret = reader): Promise<{ status: number; body: any }> {
  const response = await call('GET', path, secret)
  return { status: response.status, body: await response.json() }
}

async function post(path: string, body: unknown, secret = reader): Promise<{ status: number; body: any }> {
  const response = await call('POST', path, secret, body)
  return { status: response.status, body: await response.json() }
}

const q = (params: Record<string, string>) => new URLSearchParams(params).toString()

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-files-api-')))
  root = join(dir, 'ws')
  root2 = join(dir, 'ws2')
  mkdirSync(join(root, 'src'), { recursive: true })
  mkdirSync(root2)
  writeFileSync(join(dir, 'secret.txt'), 'outside\n')
  writeFileSync(join(root, 'src', 'main.ts'), Array.from({ length: 25 }, (_, i) => `line ${i + 1}`).join('\n'))
  writeFileSync(join(root, 'src', 'main.ts.map'), '{"version":3}')
  writeFileSync(join(root, 'bin.dat'), Uint8Array.of(0, 159, 146, 150))
  writeFileSync(join(root2, 'other.txt'), 'other workspace\n')
  symlinkSync(root, join(dir, 'ws-link'))
  const databaseUrl = `file:${join(dir, 'termkeep.db')}`
  sidecar = await startSidecar({ dataDir: join(dir, 'data'), databaseUrl }) // beside the workspaces: own state is never served
  storage = await openStorage({ url: databaseUrl })
  await migrate(storage.client)
  app = createApp({
    db: storage.db,
    client: storage.client,
    sidecar: new SidecarClient({ url: sidecar.url, secret: sidecar.secret }),
    runtime: 'node',
    tuning: { heartbeatMs: 200 },
  })
  const db = storage.db
  await db.insert(workspaces).values([
    { id: 'w1', path: root, title: 'ws', position: 1 },
    { id: 'w2', path: root2, title: 'ws2', position: 2 },
  ])
  await db.insert(sessions).values([
    { id: 's1', cwd: root },
    { id: 's2', cwd: root2 },
    { id: 'unbound', cwd: dir },
    { id: 'via-link', cwd: join(dir, 'ws-link') }, // canonicalizes to root
    { id: 'mismatch', cwd: root2 }, // listed under w1 but lives in ws2
  ])
  await db.insert(workspaceSessions).values([
    { workspaceId: 'w1', sessionId: 's1', position: 1 },
    { workspaceId: 'w2', sessionId: 's2', position: 1 },
    { workspaceId: 'w1', sessionId: 'via-link', position: 2 },
    { workspaceId: 'w1', sessionId: 'mismatch', position: 3 },
  ])
  reader = await token(['files:read'])
  writer = await token(['sessions:write'])
  onlyS2 = await token(['files:read'], ['s2'])
  noGrant = await token(['terminals:control'])
})

afterAll(async () => {
  await sidecar?.stop()
  storage?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('binding', () => {
  it('sessionWorkspace needs the listing and the canonical cwd match', async () => {
    const real = (p: string) => Promise.resolve(realpathSync(p))
    expect((await sessionWorkspace(storage.db, 's1', real))?.workspace?.id).toBe('w1')
    expect((await sessionWorkspace(storage.db, 'via-link', real))?.workspace?.root).toBe(root)
    expect((await sessionWorkspace(storage.db, 'mismatch', real))?.workspace).toBeNull()
    expect((await sessionWorkspace(storage.db, 'unbound', real))?.workspace).toBeNull()
    expect(await sessionWorkspace(storage.db, 'ghost', real)).toBeUndefined()
    // A registered root later swapped for a symlink (here: to the other workspace) binds nothing.
    const swapped = join(dir, 'swapped')
    symlinkSync(root2, swapped)
    await storage.db.insert(workspaces).values({ id: 'w-swapped', path: swapped, title: 'swapped', position: 9 })
    await storage.db.insert(sessions).values({ id: 'in-swapped', cwd: swapped })
    await storage.db.insert(workspaceSessions).values({ workspaceId: 'w-swapped', sessionId: 'in-swapped', position: 1 })
    expect((await sessionWorkspace(storage.db, 'in-swapped', real))?.workspace).toBeNull()
    expect((await get('/v1/sessions/in-swapped/files/list')).body.error.code).toBe('workspace/not-found')
  })

  it('answers a session without a bound workspace with workspace/not-found', async () => {
    for (const session of ['unbound', 'mismatch']) {
      const { status, body } = await get(`/v1/sessions/${session}/files/list`)
      expect(status, session).toBe(404)
      expect(body.error.code).toBe('workspace/not-found')
    }
    expect((await get(`/v1/sessions/via-link/files/stat?${q({ path: 'src/main.ts' })}`)).body.absolutePath).toBe(join(root, 'src/main.ts'))
  })
})

describe('authority', () => {
  it('needs files:read, and answers another session like a missing one', async () => {
    expect((await get(`/v1/sessions/s1/files/list`, noGrant)).status).toBe(403)
    const foreign = await get(`/v1/sessions/s1/files/list`, onlyS2)
    expect(foreign).toMatchObject({ status: 404, body: { error: { code: 'session/not-found' } } })
    expect(await get(`/v1/sessions/ghost/files/list`, onlyS2)).toMatchObject({
      status: 404,
      body: { error: { code: 'session/not-found' } },
    })
    expect((await get(`/v1/sessions/s2/files/list`, onlyS2)).body.entries).toEqual([{ name: 'other.txt', kind: 'file', size: 16 }])
  })

  it('has the sidecar re-check confinement itself (the API is not the only gate)', async () => {
    const direct = await fetch(`${sidecar.url}/v1/sessions/s1/files/text?${q({ path: '../secret.txt' })}`, {
      headers: { authorization: `Bearer ${sidecar.secret}` },
    })
    expect(direct.status).toBe(403)
    expect((await direct.json()).error.code).toBe('files/outside-workspace')
    const noSecret = await fetch(`${sidecar.url}/v1/sessions/s1/files/text?${q({ path: 'src/main.ts' })}`)
    expect(noSecret.status).toBe(401)
  })
})

describe('file routes', () => {
  it('reads pages, windows, whole files, related files, stats and listings', async () => {
    const page = await get(`/v1/sessions/s1/files/text?${q({ path: 'src/main.ts', offset: '24', limit: '5' })}`)
    expect(page).toMatchObject({
      status: 200,
      body: { text: 'line 24\nline 25', lines: 2, offset: 24, eof: true, absolutePath: join(root, 'src/main.ts') },
    })
    const bytes = await get(`/v1/sessions/s1/files/bytes?${q({ path: 'bin.dat', offset: '1', length: '2' })}`)
    expect(bytes.body).toMatchObject({ data: Buffer.from([159, 146]).toString('base64'), eof: false, bytes: 4 })
    const all = await get(`/v1/sessions/s1/files/all?${q({ path: 'bin.dat' })}`)
    expect(Buffer.from(all.body.data, 'base64')).toEqual(Buffer.from([0, 159, 146, 150]))
    const related = await get(`/v1/sessions/s1/files/related?${q({ path: 'src/main.ts', relative: 'main.ts.map' })}`)
    expect(Buffer.from(related.body.data, 'base64').toString()).toBe('{"version":3}')
    expect((await get(`/v1/sessions/s1/files/stat?${q({ path: 'src' })}`)).body.kind).toBe('directory')
    const listing = await get(`/v1/sessions/s1/files/list`)
    expect(listing.body).toMatchObject({ path: '', truncated: false })
    expect(listing.body.entries.map((e: { name: string }) => e.name)).toEqual(['bin.dat', 'src'])
  })

  it('answers every error kind with its code and status', async () => {
    writeFileSync(join(root, 'nul.txt'), 'a\0b')
    writeFileSync(join(root, 'wide.txt'), `${'w'.repeat(3 * 1024 * 1024)}\n`)
    const cases: Array<[string, number, string, Record<string, unknown>?]> = [
      [`text?${q({ path: 'missing.txt' })}`, 404, 'files/not-found', { path: 'missing.txt' }],
      [`text?${q({ path: 'src' })}`, 400, 'files/not-regular-file', { kind: 'directory' }],
      [`list?${q({ path: 'bin.dat' })}`, 400, 'files/not-directory', { kind: 'file' }],
      [`text?${q({ path: 'nul.txt' })}`, 400, 'files/not-text'],
      [`text?${q({ path: 'bin.dat' })}`, 400, 'files/not-text'],
      [`text?${q({ path: 'wide.txt' })}`, 413, 'files/too-large', { limit: 2 * 1024 * 1024 }],
      [`text?${q({ path: '../secret.txt' })}`, 403, 'files/outside-workspace'],
      [`text?${q({ path: join(dir, 'secret.txt') })}`, 403, 'files/outside-workspace'],
      [`related?${q({ path: 'src/main.ts', relative: '/etc/passwd' })}`, 400, 'files/bad-request', { reason: 'absolute' }],
      [`related?${q({ path: 'src/main.ts', relative: '' })}`, 400, 'files/bad-request', { reason: 'empty' }],
      [`text?${q({ path: 'src/main.ts', offset: '0' })}`, 400, 'files/bad-request'],
      [`text?${q({ path: 'src/main.ts', offset: '1.5' })}`, 400, 'files/bad-request'],
      [`text?${q({ path: 'src/main.ts', offset: '1e3' })}`, 400, 'files/bad-request'],
      [`text?${q({ path: 'src/main.ts', offset: '9007199254740993' })}`, 400, 'files/bad-request'],
      [`text?${q({ path: 'src/main.ts', limit: String(MAX_FILE_PAGE_LINES + 1) })}`, 400, 'files/bad-request'],
      [`bytes?${q({ path: 'bin.dat', length: String(2 * 1024 * 1024 + 1) })}`, 400, 'files/bad-request'],
      [`text?path=a%00b`, 400, 'files/bad-request'],
      [`text`, 400, 'files/bad-request'],
    ]
    for (const [route, status, code, details] of cases) {
      const { status: got, body } = await get(`/v1/sessions/s1/files/${route}`)
      expect({ route, got, code: body.error?.code }).toEqual({ route, got: status, code })
      if (details) expect(body.error).toMatchObject(details)
    }
  })

  it('answers a far line of a huge file without newlines with 413 at once, not 503 after the slow-call timeout', async () => {
    writeFileSync(join(root, 'disk.img'), '')
    truncateSync(join(root, 'disk.img'), 100 * 1024 ** 3) // sparse
    try {
      const started = Date.now()
      const page = await get(`/v1/sessions/s1/files/text?${q({ path: 'disk.img', offset: '2' })}`)
      const next = await post('/v1/sessions/s1/read-text', { address: 'disk.img', offset: 2 })
      expect(Date.now() - started).toBeLessThan(5_000)
      for (const { status, body } of [page, next]) {
        expect([status, body.error.code]).toEqual([413, 'files/too-large'])
        expect(body.error).toMatchObject({ limit: MAX_SKIPPED_LINE_BYTES, line: 1, byte: 0 })
      }
    } finally {
      unlinkSync(join(root, 'disk.img'))
    }
  })

  it('treats a URL-encoded traversal as a literal name', async () => {
    const { status, body } = await get(`/v1/sessions/s1/files/text?path=${encodeURIComponent('%2e%2e/secret.txt')}`)
    expect(status).toBe(404)
    expect(body.error).toMatchObject({ code: 'files/not-found', path: '%2e%2e/secret.txt' })
  })
})

describe('changes', () => {
  it('streams ready first, then OS-observed edits in order, through the API', async () => {
    const abort = new AbortController()
    const response = await call('GET', '/v1/sessions/s1/files/changes', reader, undefined, abort.signal)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const events: SseReader = readSse(response)
    try {
      const ready = await events.next(15_000)
      expect(ready.event).toBe('ready')
      expect(JSON.parse(ready.data)).toEqual({ root, os: true })
      writeFileSync(join(root, 'first.txt'), 'one')
      const first = await nextChange(events, 'first.txt')
      expect(first).toMatchObject({ path: 'first.txt', absolutePath: join(root, 'first.txt'), source: 'os' })
      expect(typeof first.version).toBe('string')
      appendFileSync(join(root, 'src', 'main.ts'), '\nline 26')
      const edited = await nextChange(events, 'src/main.ts')
      const stat = await get(`/v1/sessions/s1/files/stat?${q({ path: 'src/main.ts' })}`)
      expect(edited.version).toBe(stat.body.version)
      rmSync(join(root, 'first.txt'))
      expect(await nextChange(events, 'first.txt', (c) => c.absent === true)).toMatchObject({ absent: true, source: 'os' })
    } finally {
      abort.abort()
      await events.close().catch(() => undefined)
    }
  })
})

describe('changes after revocation', () => {
  it('ends an open stream when its token is revoked', async () => {
    const { token: record, secret } = await createToken(storage.db, { name: 'brief', grants: ['files:read'], sessions: ['s1'] })
    const abort = new AbortController()
    const events = readSse(await call('GET', '/v1/sessions/s1/files/changes', secret, undefined, abort.signal))
    try {
      expect((await events.next(15_000)).event).toBe('ready')
      await revokeToken(storage.db, record.id)
      // The next heartbeat (200 ms here) re-checks the token: an error event, then the end. Late
      // OS observations from earlier tests' edits may still come first.
      let last = await events.next(15_000)
      while (last.event === 'change') last = await events.next(15_000)
      expect(last.event).toBe('error')
      expect(JSON.parse(last.data).error.code).toBe('auth/invalid-token')
      await expect(events.next(15_000)).rejects.toThrow(/ended/)
    } finally {
      abort.abort()
      await events.close().catch(() => undefined)
    }
  })
})

describe('changes for EventSource', () => {
  it('opens with a single-use ticket instead of the Authorization header', async () => {
    const path = '/v1/sessions/s1/files/changes'
    const minted = await post('/v1/tickets', { path })
    expect(minted.status).toBe(201)
    const abort = new AbortController()
    const response = await app.request(`${path}?ticket=${encodeURIComponent(minted.body.ticket)}`, { signal: abort.signal })
    expect(response.status).toBe(200)
    const events = readSse(response)
    try {
      expect((await events.next(15_000)).event).toBe('ready')
    } finally {
      abort.abort()
      await events.close().catch(() => undefined)
    }
    expect((await app.request(`${path}?ticket=${encodeURIComponent(minted.body.ticket)}`)).status).toBe(401)
  })
})

/** The next `change` for `path` (skipping other paths and intermediate observations). */
async function nextChange(events: SseReader, path: string, accept: (c: any) => boolean = () => true): Promise<any> {
  for (;;) {
    const event = await events.next(15_000)
    if (event.event !== 'change') continue
    const change = JSON.parse(event.data)
    if (change.path === path && accept(change)) return change
  }
}

describe('Files.readText', () => {
  it('stores attachments and tool results (sessions:write) and reads them page by page', async () => {
    const text = Array.from({ length: 12 }, (_, i) => `row ${i + 1}`).join('\r\n')
    expect((await post('/v1/sessions/s1/attachments', { name: 'notes.txt', content: text })).status).toBe(403)
    const stored = await post('/v1/sessions/s1/attachments', { name: 'notes.txt', content: text }, writer)
    expect(stored).toMatchObject({ status: 201, body: { address: expect.stringMatching(/^attachment:/), bytes: text.length } })
    const pages = await readAll(`${stored.body.address}`, 5)
    expect(pages.map((p) => p.lines)).toEqual([5, 5, 2])
    expect(pages.map((p) => p.text).join('\n')).toBe(text.replace(/\r\n/g, '\n'))
    expect(pages.at(-1)).toMatchObject({ eof: true, kind: 'attachment' })
    expect(pages.at(-1).next).toBeUndefined()

    const result = await post('/v1/sessions/s1/tool-results', { toolName: 'grep', content: 'a\nb\nc\n' }, writer)
    expect(result.body.address).toMatch(/^tool-result:/)
    expect((await readAll(result.body.address, 2)).map((p) => p.text)).toEqual(['a\nb', 'c'])

    const base64 = await post(
      '/v1/sessions/s1/attachments',
      { name: 'b', encoding: 'base64', content: Buffer.from([0xff, 0xfe]).toString('base64') },
      writer,
    )
    expect((await post('/v1/sessions/s1/read-text', { address: base64.body.address })).body.error.code).toBe('files/not-text')
    expect((await post('/v1/sessions/s1/attachments', { name: 'b', encoding: 'base64', content: '@@' }, writer)).status).toBe(400)
  })

  it('continues a workspace file across pages', async () => {
    const pages = await readAll('src/main.ts', 10)
    expect(pages.map((p) => p.lines)).toEqual([10, 10, 6])
    expect(pages[2]).toMatchObject({ kind: 'file', eof: true, offset: 21 })
    expect(
      pages
        .map((p) => p.text)
        .join('\n')
        .split('\n')
        .at(-1),
    ).toBe('line 26')
    expect(new Set(pages.map((p) => p.version)).size).toBe(1)
  })

  it("refuses another session's resource, another session's or token's next, and a tampered next, like missing", async () => {
    const stored = await post('/v1/sessions/s1/tool-results', { toolName: 't', content: 'x\ny\nz' }, writer)
    const first = await post('/v1/sessions/s1/read-text', { address: stored.body.address, limit: 1 })
    expect(first.body).toMatchObject({ text: 'x', eof: false })
    const next = first.body.next
    const missing = { status: 404, code: 'resource/not-found' }
    const outcome = (r: { status: number; body: any }) => ({ status: r.status, code: r.body.error?.code })

    // The address itself from another session.
    expect(outcome(await post('/v1/sessions/s2/read-text', { address: stored.body.address }))).toEqual(missing)
    // The continuation from another session (same token, which may read both).
    expect(outcome(await post('/v1/sessions/s2/read-text', { next }))).toEqual(missing)
    // The continuation from another token on the same session.
    const otherReader = await token(['files:read'])
    expect(outcome(await post('/v1/sessions/s1/read-text', { next }, otherReader))).toEqual(missing)
    // Altered: a different offset in the payload, a flipped MAC character, garbage.
    const [payload, mac] = next.cursor.split('.')
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString())
    const forged = Buffer.from(JSON.stringify({ ...decoded, offset: 1, byte: 0 })).toString('base64url')
    // A 32-byte MAC is 43 base64url characters; the last carries 2 spare (zero) bits, so setting
    // its lowest bit spells the same MAC non-canonically, which must not verify either.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const flip = (text: string, at: number) => text.slice(0, at) + alphabet[alphabet.indexOf(text[at]!) ^ 1] + text.slice(at + 1)
    const flipped = [flip(mac, 0), flip(mac, 21), flip(mac, mac.length - 1)]
    expect(Buffer.from(flipped[2]!, 'base64url')).toEqual(Buffer.from(mac, 'base64url'))
    const altered = [`${forged}.${mac}`, ...flipped.map((m) => `${payload}.${m}`), 'garbage', `${payload}.${mac}.x`]
    for (const cursor of altered) {
      expect(outcome(await post('/v1/sessions/s1/read-text', { next: { cursor } })), cursor).toEqual(missing)
    }
    // A cursor that points another session's resource at this one is just as dead.
    const retargeted = Buffer.from(JSON.stringify({ ...decoded, address: 'src/main.ts' })).toString('base64url')
    expect(outcome(await post('/v1/sessions/s1/read-text', { next: { cursor: `${retargeted}.${mac}` } }))).toEqual(missing)
    // The genuine one still works, for its own session and token.
    expect((await post('/v1/sessions/s1/read-text', { next })).body).toMatchObject({ text: 'y', offset: 2 })
  })

  it('validates requests and passes workspace errors through', async () => {
    expect((await post('/v1/sessions/s1/read-text', {})).status).toBe(400)
    expect((await post('/v1/sessions/s1/read-text', { address: 'x', next: { cursor: 'y' } })).status).toBe(400)
    expect((await post('/v1/sessions/s1/read-text', { address: 'src/main.ts', limit: MAX_FILE_PAGE_LINES + 1 })).status).toBe(400)
    expect((await post('/v1/sessions/s1/read-text', { address: '../secret.txt' })).body.error.code).toBe('files/outside-workspace')
    expect((await post('/v1/sessions/s1/read-text', { address: 'attachment:nope' })).body.error.code).toBe('resource/not-found')
    expect((await post('/v1/sessions/unbound/read-text', { address: 'src/main.ts' })).body.error.code).toBe('workspace/not-found')
  })
})

describe('deployment and documentation', () => {
  it('reads outside the workspace only with TERMKEEP_FILES_ALLOW_OUTSIDE=1 on the sidecar', async () => {
    // Its own copy of the database (a second sidecar on the one the first uses refuses to start),
    // without the first one's claim to it.
    const copy = join(dir, 'allow-outside.db')
    await storage.client.execute({ sql: 'VACUUM INTO ?', args: [copy] })
    const copied = await openStorage({ url: `file:${copy}` })
    await copied.client.execute('UPDATE host_generations SET ended_at = 0')
    copied.close()
    const open = await startSidecar({ databaseUrl: `file:${copy}`, env: { TERMKEEP_FILES_ALLOW_OUTSIDE: '1' } })
    try {
      const client = new SidecarClient({ url: open.url, secret: open.secret })
      expect((await client.readFileText('s1', { path: '../secret.txt' })).text).toBe('outside')
      expect((await client.listFiles('s1', { path: dir })).entries.some((e) => e.name === 'secret.txt')).toBe(true)
    } finally {
      await open.stop()
    }
  })

  it('refuses a stored resource over 32 MiB', async () => {
    const big = 'a'.repeat(32 * 1024 * 1024 + 1)
    const response = await post('/v1/sessions/s1/tool-results', { toolName: 'huge', content: big }, writer)
    expect(response.status).toBe(413)
    expect(response.body.error.code).toBe('request/too-large')
  })

  it('documents every files route in the OpenAPI document', async () => {
    const document = await (await app.request('/openapi.json')).json()
    for (const route of ['text', 'bytes', 'all', 'related', 'stat', 'list', 'changes']) {
      expect(document.paths[`/v1/sessions/{sid}/files/${route}`]?.get, route).toBeDefined()
    }
    for (const route of ['read-text', 'attachments', 'tool-results']) {
      expect(document.paths[`/v1/sessions/{sid}/${route}`]?.post, route).toBeDefined()
    }
    const text = document.paths['/v1/sessions/{sid}/files/text'].get
    expect(text.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['path', 'offset', 'limit']))
  })
})

async function readAll(address: string, limit: number): Promise<any[]> {
  const pages: any[] = []
  let response = await post('/v1/sessions/s1/read-text', { address, limit })
  for (;;) {
    expect(response.status, JSON.stringify(response.body)).toBe(200)
    pages.push(response.body)
    if (!response.body.next) return pages
    response = await post('/v1/sessions/s1/read-text', { next: response.body.next, limit })
    if (pages.length > 50) throw new Error('runaway continuation')
  }
}
