/**
 * readDisplay from libSQL with no sidecar at all: 404 before any revision, then begin / rows… /
 * exactly one end, decodable and replayable into the same cells; revisions are numbered per
 * terminal and pruned while keeping the newest few.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DISPLAY_KEEP_MS, DISPLAY_KEEP_REVISIONS } from '../../storage/tuning.ts'
import { displayChunks, displayRevisions, sessions, terminals } from '../../storage/tables.ts'
import type { DisplayBegin, DisplayEnd, RowsEvent } from '../../schema/wire/display.ts'
import { pruneDisplayRevisions } from '../../storage/displays/writes.ts'
import { persistRevision, RevisionWriter } from '../../sidecar/display/persist.ts'
import { encodeRevision } from '../../sidecar/display/revision.ts'
import { bufferDiff, emulator, referenceRevision, replay } from '../../test/support/display/harness.ts'
import { readAllEvents } from '../../test/support/display/sse.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { freePort, waitFor } from '../../test/support/ports.ts'
import { createApp } from '../app.ts'
import { createToken } from '../../storage/tokens.ts'
import { SidecarClient } from '../sidecar-client.ts'
import { DisplayStaging } from '../../common/display/staging.ts'
import { TermkeepClient } from '../../web/client/api.ts'
import { readDisplay } from '../../web/client/display.ts'
import { decodeDisplay } from '../../common/display/decode.ts'

let dir: string
let storage: Storage
let app: ReturnType<typeof createApp>
let token: string
let screenOnly: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'termkeep-display-'))
  storage = await openStorage({ url: `file:${join(dir, 'termkeep.db')}` })
  await migrate(storage.client)
  await storage.db.insert(sessions).values({ id: 's1', cwd: dir })
  // Nothing listens on this port: the display must not need the sidecar.
  const sidecar = new SidecarClient({ url: `http://127.0.0.1:${await freePort()}`, secret: 'x'.repeat(32) })
  app = createApp({ db: storage.db, client: storage.client, sidecar, runtime: 'node' })
  token = (await createToken(storage.db, { name: 't', grants: ['terminals:display'], sessions: 'all' })).secret
  screenOnly = (await createToken(storage.db, { name: 'u', grants: ['terminals:screen'], sessions: 'all' })).secret
})
afterAll(() => {
  storage?.close()
  rmSync(dir, { recursive: true, force: true })
})

const get = (path: string, secret = token) => app.request(path, { headers: { authorization: `Bearer ${secret}` } })

async function coloured(lines: number) {
  const e = emulator(60, 12)
  let out = ''
  for (let i = 0; i < lines; i++)
    out += `\x1b[38;2;${i % 256};80;160m${i}\x1b[0m \x1b[4${i % 8}m  \x1b[0m\x1b[1mbold ${'中'.repeat(i % 5)}\x1b[0m\r\n`
  await e.write(`${out}\x1b]2;colours\x07\x1b[?25l`)
  return e
}

describe('readDisplay', () => {
  it('answers 404 display/not-found before any revision', async () => {
    const response = await get('/v1/sessions/s1/terminals/t1/display')
    expect(response.status).toBe(404)
    expect((await response.json()).error.code).toBe('display/not-found')
  })

  it('needs terminals:display', async () => {
    const response = await get('/v1/sessions/s1/terminals/t1/display', screenOnly)
    expect(response.status).toBe(403)
  })

  it('streams begin, ordered rows and exactly one end, which replay into the same cells', async () => {
    const source = await coloured(3000)
    const revision = encodeRevision(source.tracker, undefined, { sequence: 42 })
    const reference = referenceRevision(source.tracker, { sequence: 42 })
    expect(revision.chunks).toBeGreaterThan(3)
    expect((await persistRevision(storage.db, 's1', 't1', revision)).revision).toBe(1)
    const response = await get('/v1/sessions/s1/terminals/t1/display')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/)
    const events = await readAllEvents(response)
    expect(events[0].event).toBe('begin')
    expect(events.at(-1)!.event).toBe('end')
    expect(events.filter((e) => e.event === 'end')).toHaveLength(1)
    const rows = events.filter((e) => e.event === 'rows')
    expect(rows.map((e) => e.data)).toEqual(reference.chunks)
    const begin = JSON.parse(events[0].data) as DisplayBegin
    expect(begin).toMatchObject({ revision: 1, sequence: 42, cols: 60, rows: 12, title: 'colours', origin: 'live', chunks: rows.length })
    expect(begin.cursor.visible).toBe(false)
    const end = JSON.parse(events.at(-1)!.data) as DisplayEnd
    expect(end).toEqual({ revision: 1, truncated: false })
    const display = decodeDisplay(
      begin,
      rows.map((e) => JSON.parse(e.data) as RowsEvent),
      end,
    )
    const copy = await replay(display)
    expect(bufferDiff(source.terminal.buffer.normal, copy.terminal.buffer.normal, 60)).toEqual([])
    expect(copy.tracker.cursor()).toEqual(source.tracker.cursor())
  })

  it('numbers revisions per terminal and prunes old ones but keeps the newest few', async () => {
    const e = emulator(20, 4)
    const old = Date.now() - DISPLAY_KEEP_MS - 1000
    for (let i = 0; i < 8; i++) {
      await e.write(`step ${i}\r\n`)
      await persistRevision(storage.db, 's1', 'prune', encodeRevision(e.tracker), { now: i < 7 ? old : Date.now() })
    }
    const where = and(eq(displayRevisions.sessionId, 's1'), eq(displayRevisions.terminalId, 'prune'))
    const kept = (await storage.db.select({ r: displayRevisions.revision }).from(displayRevisions).where(where)).map((r) => r.r)
    expect(kept.sort((a, b) => a - b)).toEqual(Array.from({ length: DISPLAY_KEEP_REVISIONS + 1 }, (_, i) => 8 - DISPLAY_KEEP_REVISIONS + i))
    const chunkRevisions = await storage.db
      .selectDistinct({ r: displayChunks.revision })
      .from(displayChunks)
      .where(and(eq(displayChunks.sessionId, 's1'), eq(displayChunks.terminalId, 'prune')))
    expect(chunkRevisions.map((r) => r.r).sort((a, b) => a - b)).toEqual(kept)
    const events = await readAllEvents(await get('/v1/sessions/s1/terminals/prune/display'))
    expect(JSON.parse(events.at(-1)!.data)).toEqual({ revision: 8, truncated: false })
  })

  it('the writer coalesces a burst to the latest revision, never a queue', async () => {
    const e = emulator(20, 4)
    const writer = new RevisionWriter(storage.db, 's1', 'burst')
    const revisions = []
    for (let i = 0; i < 20; i++) {
      await e.write(`burst ${i}\r\n`)
      revisions.push(encodeRevision(e.tracker))
    }
    for (const revision of revisions) writer.submit(revision)
    await writer.idle()
    expect(writer.submitted).toBe(20)
    // The first write started at once; the other 19 collapsed into the newest.
    expect(writer.writes).toBe(2)
    expect(writer.superseded).toBe(18)
    expect(writer.written).toBe(2)
    const events = await readAllEvents(await get('/v1/sessions/s1/terminals/burst/display'))
    const rows = events.filter((x) => x.event === 'rows').map((x) => JSON.parse(x.data) as RowsEvent)
    expect(JSON.stringify(rows)).toContain('burst 19')
  })

  it("prunes a stopped terminal's old revisions (the newest few kept, one for an ended terminal) and keeps young ones", async () => {
    const e = await emulator(40, 5)
    const old = Date.now() - DISPLAY_KEEP_MS - 1000
    // Written without a newer write after them (the terminal stopped): nothing pruned yet.
    for (let i = 0; i < 8; i++) {
      await e.write(`stopped ${i}\r\n`)
      await persistRevision(storage.db, 's1', 'stopped', encodeRevision(e.tracker), { now: old + i })
    }
    for (let i = 0; i < 8; i++) {
      await e.write(`young ${i}\r\n`)
      await persistRevision(storage.db, 's1', 'young', encodeRevision(e.tracker))
    }
    const kept = async (tid: string) => {
      const where = and(eq(displayRevisions.sessionId, 's1'), eq(displayRevisions.terminalId, tid))
      const headers = (await storage.db.select({ r: displayRevisions.revision }).from(displayRevisions).where(where))
        .map((r) => r.r)
        .sort((a, b) => a - b)
      const chunkWhere = and(eq(displayChunks.sessionId, 's1'), eq(displayChunks.terminalId, tid))
      const chunks = (await storage.db.selectDistinct({ r: displayChunks.revision }).from(displayChunks).where(chunkWhere))
        .map((r) => r.r)
        .sort((a, b) => a - b)
      expect(chunks).toEqual(headers)
      return headers
    }
    // A retired terminal's screen changes no more: its newest revision is all it keeps.
    for (let i = 0; i < 5; i++) {
      await e.write(`ended ${i}\r\n`)
      await persistRevision(storage.db, 's1', 'ended', encodeRevision(e.tracker), { now: old + i })
    }
    await storage.db.insert(terminals).values({
      sessionId: 's1',
      id: 'ended',
      title: 'ended',
      shellPath: '/bin/sh',
      shellArgs: [],
      cwd: dir,
      cols: 40,
      rows: 5,
      state: 'retired',
      hostGeneration: 1,
    })
    expect(await kept('stopped')).toHaveLength(8)
    const before = await kept('t1')
    await pruneDisplayRevisions(storage.db)
    expect(await kept('stopped')).toEqual(Array.from({ length: DISPLAY_KEEP_REVISIONS + 1 }, (_, i) => 8 - DISPLAY_KEEP_REVISIONS + i))
    expect(await kept('ended')).toEqual([5])
    expect(await kept('young')).toHaveLength(8)
    expect(await kept('t1')).toEqual(before)
    const events = await readAllEvents(await get('/v1/sessions/s1/terminals/stopped/display'))
    expect(JSON.parse(events.at(-1)!.data)).toEqual({ revision: 8, truncated: false })
  })

  it('tries a write the database could not take again until it lands, and a newer revision replaces the waiting one', async () => {
    const e = await emulator(40, 5)
    // The writer's own connection, with a short busy timeout; this test's holds a write lock.
    const own = await openStorage({ url: `file:${join(dir, 'termkeep.db')}`, busyTimeoutMs: 50 })
    const writer = new RevisionWriter(own.db, 's1', 'retry', { retryMs: 20 })
    const lock = await storage.client.transaction('write')
    await lock.execute("UPDATE sessions SET cwd = cwd WHERE id = 'nobody'")
    try {
      await e.write('first\r\n')
      writer.submit(encodeRevision(e.tracker))
      await writer.idle()
      expect(writer.failures).toBeGreaterThanOrEqual(1)
      expect(writer.retrying).toBe(true)
      await e.write('second\r\n')
      writer.submit(encodeRevision(e.tracker))
      await new Promise((r) => setTimeout(r, 100))
      expect(writer.written).toBe(0)
    } finally {
      await lock.rollback()
    }
    await waitFor(async () => writer.written > 0 && !writer.retrying, 10_000, 'the retried write')
    own.close()
    expect(writer.written).toBe(1)
    expect(writer.superseded).toBe(1)
    const events = await readAllEvents(await get('/v1/sessions/s1/terminals/retry/display'))
    const text = JSON.stringify(events.filter((x) => x.event === 'rows').map((x) => JSON.parse(x.data)))
    expect(text).toContain('second')
  })

  it('the client stages a transfer and yields it only at end; a cut transfer is discarded', async () => {
    const client = new TermkeepClient({ url: 'http://localhost', token, fetch: async (url, init) => app.request(url as string, init) })
    const whole = await readDisplay(client, 's1', 't1')
    expect(whole.begin.revision).toBe(1)
    expect(whole.history.length + whole.viewport.length).toBeGreaterThan(3000)
    const events = await readAllEvents(await get('/v1/sessions/s1/terminals/t1/display'))
    const cut = new DisplayStaging()
    for (const e of events.slice(0, -2)) cut.accept(e.event, JSON.parse(e.data))
    expect(cut.finish()).toBeUndefined()
    cut.accept('end', JSON.parse(events.at(-1)!.data))
    expect(cut.finish()).toBeUndefined() // a rows event is missing
    const truncatedBody = events
      .slice(0, -1)
      .map((e) => `event: ${e.event}\ndata: ${e.data}\n\n`)
      .join('')
    const cutShort = new TermkeepClient({ url: 'http://termkeep.test', token, fetch: async () => new Response(truncatedBody) })
    await expect(readDisplay(cutShort, 's1', 't1')).rejects.toThrow(/before it was complete/)
  })
})
