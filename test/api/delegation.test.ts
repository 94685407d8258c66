/**
 * End to end through the API into the real sidecar process: create a terminal, follow it, write
 * input, read the output with watchOutput and readOutput, resize, rename, close; SSE relayed as
 * it arrives, resumed with Last-Event-ID, and torn down upstream when the client goes away.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createToken, revokeToken } from '../../storage/tokens.ts'
import { startNodeApi } from '../../api/runtime/node.ts'
import { GRANTS } from '../../schema/grants.ts'
import { waitFor } from '../support/ports.ts'
import { json, readEvents, startHarness, type Harness, type SseMessage } from './harness.ts'

let h: Harness
let token: string
const SID = 'e2e'
const T = `/v1/sessions/${SID}/terminals`

beforeAll(async () => {
  h = await startHarness()
  token = await h.token(GRANTS)
  const dir = join(h.dir, 'work')
  mkdirSync(dir)
  await h.request('POST', '/v1/sessions', { token, body: { id: SID, cwd: realpathSync(dir) } })
})
afterAll(async () => {
  await h?.close()
})

const api = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
  const response = await h.request(method, path, { token, body, headers })
  const text = await response.text()
  return { status: response.status, body: text ? JSON.parse(text) : undefined }
}

const decode = (events: SseMessage[], field = 'data') =>
  events
    .filter((e) => e.event === 'data' || e.event === 'output')
    .map((e) => Buffer.from(json(e)[field], 'base64').toString('utf8'))
    .join('')

/** Opens a follow attachment through the API and waits for its snapshot. */
async function attach(tid: string, attachment: string) {
  const controller = new AbortController()
  const response = await h.request('GET', `${T}/${tid}/follow?attachment=${attachment}`, { token, signal: controller.signal })
  expect(response.status).toBe(200)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  while (!text.includes('event: snapshot')) {
    const { value, done } = await reader.read()
    if (done) break
    text += decoder.decode(value)
  }
  return { reader, close: () => reader.cancel() }
}

describe('terminal delegation through the API', () => {
  it('creates idempotently and lists from the database', async () => {
    const created = await api('PUT', `${T}/t1`, { cols: 80, rows: 24 })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ sessionId: SID, id: 't1', cols: 80, rows: 24 })
    const again = await api('PUT', `${T}/t1`, { cols: 80, rows: 24 })
    expect(again.status).toBe(200)
    const listed = await api('GET', T)
    expect(listed.body.terminals.map((t: any) => t.id)).toContain('t1')
    expect((await api('GET', `${T}/t1`)).body).toMatchObject({ id: 't1', cols: 80, rows: 24 })
    expect((await api('GET', `/v1/sessions/${SID}/terminal-environment`)).body.limits).toMatchObject({ maxInputBytes: 65536 })
    expect((await api('GET', `/v1/sessions/${SID}/shells`)).body.shells.length).toBeGreaterThan(0)
  })

  it('writes input as the controller and reads it back through watchOutput and readOutput', async () => {
    const follower = await attach('t1', 'a1')
    try {
      const watch = await h.request('GET', `${T}/t1/output/watch?after=0`, { token })
      expect(watch.status).toBe(200)
      const input = await h.request('POST', `${T}/t1/input`, {
        token,
        body: 'echo hello-$((40+2))-termkeep\r',
        headers: { 'termkeep-attachment': 'a1' },
      })
      expect(input.status).toBe(204)
      const events = await readEvents(watch, (e) => decode(e).includes('hello-42-termkeep'))
      expect(events.find((e) => e.event !== ':')!.event).toBe('begin')
      expect(json(events.find((e) => e.event === 'begin')!).initialSize).toEqual({ cols: 80, rows: 24 })
      expect(decode(events)).toContain('hello-42-termkeep')
      const ids = events.filter((e) => e.event === 'data').map((e) => Number(e.id))
      expect(ids).toEqual([...ids].sort((a, b) => a - b))

      const page = await api('GET', `${T}/t1/output?after=0&limit=256`)
      expect(page.status).toBe(200)
      const text = page.body.items
        .filter((i: any) => i.kind === 'data')
        .map((i: any) => Buffer.from(i.data, 'base64').toString())
        .join('')
      expect(text).toContain('hello-42-termkeep')
      expect(page.body.next).toBe(page.body.items.at(-1).sequence)

      // Resume with Last-Event-ID: exactly the bytes after that sequence (items may coalesce
      // differently on replay, so compare bytes, not item boundaries).
      const middle = 1 // the first native record; what follows it includes the echo's output
      const rest = await api('GET', `${T}/t1/output?after=${middle}&limit=256`)
      const expected = rest.body.items
        .filter((i: any) => i.kind === 'data')
        .map((i: any) => Buffer.from(i.data, 'base64').toString())
        .join('')
      const resumed = await h.request('GET', `${T}/t1/output/watch`, { token, headers: { 'last-event-id': String(middle) } })
      expect(expected).toContain('hello-42-termkeep')
      const after = await readEvents(resumed, (e) => decode(e).length >= expected.length)
      expect(Number(after.find((e) => e.event === 'data')!.id)).toBeGreaterThan(middle)
      expect(decode(after).startsWith(expected)).toBe(true)
    } finally {
      await follower.close()
    }
  })

  it('resizes as the controller only; the resize is in the journal', async () => {
    const follower = await attach('t1', 'a2')
    try {
      const refused = await api('POST', `${T}/t1/resize`, { cols: 100, rows: 30 }, { 'termkeep-attachment': 'a1' })
      expect(refused.status).toBe(409)
      expect(refused.body.error.code).toBe('terminal/control-unavailable')
      const resized = await api('POST', `${T}/t1/resize`, { cols: 100, rows: 30 }, { 'termkeep-attachment': 'a2' })
      expect(resized.status).toBe(200)
      expect(resized.body).toMatchObject({ cols: 100, rows: 30 })
      const page = await api('GET', `${T}/t1/output?after=0&limit=256`)
      expect(page.body.items.filter((i: any) => i.kind === 'resize').at(-1)).toMatchObject({ cols: 100, rows: 30 })
      await waitFor(async () => (await api('GET', `${T}/t1`)).body.cols === 100, 10_000, 'resized row in libSQL')
    } finally {
      await follower.close()
    }
  })

  it("gives control to the follow's own token only: another token that learned the attachment id cannot type or resize as it", async () => {
    const follower = await attach('t1', 'owned')
    try {
      const typist = await h.token(['terminals:control'], [SID])
      // An idempotent create answers with the live info, controller included.
      const learned = await h.request('PUT', `${T}/t1`, { token: typist, body: { cols: 80, rows: 24 } })
      expect(((await learned.json()) as any).controllerId).toBe('owned')
      const before = await api('GET', `${T}/t1/output?after=0&limit=256`)
      const input = await h.request('POST', `${T}/t1/input`, {
        token: typist,
        body: 'echo INTRUDER\r',
        headers: { 'termkeep-attachment': 'owned' },
      })
      expect(input.status).toBe(409)
      expect(((await input.json()) as any).error.code).toBe('terminal/control-unavailable')
      const resize = await h.request('POST', `${T}/t1/resize`, {
        token: typist,
        body: { cols: 90, rows: 20 },
        headers: { 'termkeep-attachment': 'owned' },
      })
      expect(resize.status).toBe(409)
      // The follow's own token still controls it.
      expect((await api('POST', `${T}/t1/input`, ' ', { 'termkeep-attachment': 'owned' })).status).toBe(204)
      const after = await api('GET', `${T}/t1/output?after=${before.body.next ?? 0}&limit=256`)
      const text = after.body.items
        .filter((i: any) => i.kind === 'data')
        .map((i: any) => Buffer.from(i.data, 'base64').toString('latin1'))
        .join('')
      expect(text).not.toContain('INTRUDER')
    } finally {
      await follower.close()
    }
  })

  it('cancels the upstream follow when the client goes away (control is released)', async () => {
    const follower = await attach('t1', 'a3')
    await waitFor(async () => (await h.deps.sidecar.info(SID, 't1')).controllerId === 'a3', 10_000, 'a3 in control')
    await follower.close()
    await waitFor(async () => (await h.deps.sidecar.info(SID, 't1')).controllerId === null, 10_000, 'control released upstream')
  })

  it('answers HEAD on the stream routes without opening a stream: the live follower keeps control', async () => {
    const follower = await attach('t1', 'keepA')
    try {
      expect((await api('POST', `${T}/t1/input`, ' ', { 'termkeep-attachment': 'keepA' })).status).toBe(204)
      for (const path of ['follow?attachment=headB', 'retain', 'output/watch?after=0', 'screen/watch']) {
        const head = await h.request('HEAD', `${T}/t1/${path}`, { token })
        expect([path, head.status, head.headers.get('content-type')]).toEqual([path, 200, 'text/event-stream; charset=utf-8'])
      }
      // The checks before the stream still decide the status.
      expect((await h.request('HEAD', `${T}/t1/follow`, { token })).status).toBe(400)
      expect((await h.request('HEAD', `/v1/sessions/nope/terminals/t1/follow?attachment=headB`, { token })).status).toBe(404)
      expect((await api('POST', `${T}/t1/input`, ' ', { 'termkeep-attachment': 'keepA' })).status).toBe(204)
      expect((await h.deps.sidecar.info(SID, 't1')).controllerId).toBe('keepA')
    } finally {
      await follower.close()
    }
  })

  it('cancels the upstream too when a client disconnects from the real Node server', async () => {
    const server = await startNodeApi({
      storage: h.storage,
      sidecarUrl: h.sidecar.url,
      sidecarSecret: h.sidecar.secret,
      host: '127.0.0.1',
      port: 0,
    })
    try {
      const abort = new AbortController()
      const response = await fetch(`${server.url}${T}/t1/follow?attachment=a4`, {
        headers: { authorization: `Bearer ${token}` },
        signal: abort.signal,
      })
      expect(response.status).toBe(200)
      await waitFor(async () => (await h.deps.sidecar.info(SID, 't1')).controllerId === 'a4', 10_000, 'a4 in control')
      abort.abort()
      await waitFor(async () => (await h.deps.sidecar.info(SID, 't1')).controllerId === null, 10_000, 'control released upstream')
    } finally {
      await server.close()
    }
  })

  it('ends a relayed stream when its token is revoked, and releases the upstream', async () => {
    const { token: record, secret } = await createToken(h.storage.db, {
      name: 'brief',
      grants: ['terminals:control', 'terminals:output'],
      sessions: [SID],
    })
    const response = await h.request('GET', `${T}/t1/follow?attachment=a5`, { token: secret })
    expect(response.status).toBe(200)
    await waitFor(async () => (await h.deps.sidecar.info(SID, 't1')).controllerId === 'a5', 10_000, 'a5 in control')
    const ended = readEvents(response, () => false)
    await revokeToken(h.storage.db, record.id)
    await ended // the stream ends by itself
    await waitFor(async () => (await h.deps.sidecar.info(SID, 't1')).controllerId === null, 10_000, 'control released upstream')
  })

  it('relays retain, renames, and closes (repeatably); the output ends with closed', async () => {
    const retain = await h.request('GET', `${T}/t1/retain`, { token })
    const held = await readEvents(retain, (e) => e.some((x) => x.event === 'retained'))
    expect(held.some((e) => e.event === 'retained')).toBe(true)

    const renamed = await api('PATCH', `${T}/t1`, { title: '  build  ' })
    expect(renamed.body.title).toBe('build')

    const watch = await h.request('GET', `${T}/t1/output/watch?after=0`, { token })
    const closed = await api('DELETE', `${T}/t1`)
    expect(closed.status).toBe(200)
    expect(closed.body.closed).toBe(true)
    expect((await api('DELETE', `${T}/t1`)).status).toBe(200)
    const events = await readEvents(watch, (e) => e.some((x) => x.event === 'closed' || x.event === 'unavailable'))
    expect(events.at(-1)!.event).toBe('closed')
    const info = await api('GET', `${T}/t1`)
    expect(['closed', 'retired']).toContain(info.body.state)
    const reopen = await api('PUT', `${T}/t1`, { cols: 80, rows: 24 })
    expect(reopen.status).toBeGreaterThanOrEqual(400)
  })

  it('passes typed sidecar errors through unchanged', async () => {
    const missing = await api('GET', `${T}/nope/output?after=0`)
    expect(missing.status).toBe(404)
    expect(missing.body.error.code).toMatch(/^terminal\//)
  })

  it('serves the persisted display and terminal info from libSQL after the sidecar is stopped', async () => {
    await waitFor(
      async () =>
        Number(
          (
            await h.storage.client.execute({
              sql: 'SELECT count(*) FROM display_revisions WHERE session_id = ? AND terminal_id = ?',
              args: [SID, 't1'],
            })
          ).rows[0]![0],
        ) > 0,
      20_000,
      'a settled display revision',
    )
    await h.sidecar.stop()
    const display = await h.request('GET', `${T}/t1/display`, { token })
    expect(display.status).toBe(200)
    const events = await readEvents(display, (e) => e.some((x) => x.event === 'end'))
    const named = events.filter((e) => e.event !== ':').map((e) => e.event)
    expect(named[0]).toBe('begin')
    expect(named.at(-1)).toBe('end')
    expect(named.slice(1, -1).every((e) => e === 'rows')).toBe(true)
    expect(
      events
        .filter((e) => e.event === 'rows')
        .map((e) => e.data)
        .join(''),
    ).toContain('hello-42-termkeep')
    expect((await api('GET', `${T}/t1`)).body.title).toBe('build')
    expect((await api('GET', T)).body.terminals.map((t: any) => t.id)).toContain('t1')
    expect((await api('GET', `${T}/t1/output?after=0`)).status).toBe(503)
  })
})
