/**
 * watchOutput fan-out: watchers of one journal at the same cursor get the very same encoded batch
 * (read and encoded once), byte for byte what one watcher alone gets; what is kept is bounded;
 * and an SSE stream whose events come from memory yields to the event loop after each one.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { MAX_RECORD_RAW_BYTES } from '../../schema/limits.ts'
import { WATCH_SHARED_BATCHES_BYTES } from '../tuning.ts'
import { SseFrames, sseResponse, type SseYield } from '../http/sse.ts'
import { Journal } from './journal.ts'
import { SharedBatches } from './shared-batches.ts'
import { watchOutput } from './watch.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-shared-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0

/** A journal of `records` flushes of distinct bytes (one native record each), ended. */
function filled(records: number, size = MAX_RECORD_RAW_BYTES): Journal {
  const journal = new Journal(join(dir, `j${++n}`, 'spool'), { cols: 80, rows: 24 })
  for (let i = 0; i < records; i++) {
    journal.appendData(Buffer.alloc(size, 65 + (i % 26)))
    journal.flush()
  }
  journal.end()
  return journal
}

/** Every yield of a watch, to `closed`. */
async function drain(journal: Journal, after = 0): Promise<SseYield[]> {
  const out: SseYield[] = []
  for await (const y of watchOutput(journal, after, new AbortController().signal)) out.push(y)
  return out
}

const bytesOf = (yields: SseYield[]) =>
  Buffer.concat(yields.map((y) => (y instanceof SseFrames ? y.bytes : Buffer.from(JSON.stringify(y))))).toString('latin1')

describe('shared watchOutput batches', () => {
  it("gives watchers at one cursor the same encoded batch, identical to a lone watcher's stream", async () => {
    const journal = filled(60) // ~2.9 MB: several batches of 16 items
    const alone = bytesOf(await drain(journal))
    const watchers = await Promise.all(Array.from({ length: 5 }, () => drain(journal)))
    for (const yields of watchers) expect(bytesOf(yields)).toBe(alone)
    // The very same frames object at every position: read and encoded once, not five times.
    const frames = watchers.map((yields) => yields.filter((y) => y instanceof SseFrames))
    expect(frames[0]!.length).toBeGreaterThan(2)
    for (const other of frames.slice(1)) frames[0]!.forEach((f, i) => expect(other[i]).toBe(f))
    // A watcher resuming inside a batch (Last-Event-ID) gets its exact suffix while others share.
    const suffix = bytesOf(await drain(journal, 17))
    const [resumed] = await Promise.all([drain(journal, 17), drain(journal), drain(journal)])
    expect(bytesOf(resumed)).toBe(suffix)
    expect(suffix).toContain('id: 33\n')
  })

  it('keeps batches only while two or more watch, until every watcher read past them, and at most WATCH_SHARED_BATCHES_BYTES', async () => {
    const journal = filled(400) // ~19 MB
    const first = SharedBatches.join(journal)
    const lone = await first.read(0)
    expect(lone).toBeDefined()
    expect(first.keptBatches).toBe(0) // alone: nobody to share with
    const second = SharedBatches.join(journal)
    let cursor = 0
    for (;;) {
      const batch = await first.read(cursor)
      if (!batch) break
      expect(await second.read(cursor)).toBe(batch)
      cursor = batch.last
      expect(first.keptBatches).toBeLessThanOrEqual(Math.ceil(WATCH_SHARED_BATCHES_BYTES / batch.frames.bytes.length) + 1)
    }
    expect(cursor).toBe(journal.lastSequence)
    second.leave()
    first.leave()
    // A watcher ahead leaves batches for the one behind; once both read past them, none is kept.
    const other = filled(100)
    const ahead = SharedBatches.join(other)
    const behind = SharedBatches.join(other)
    const cursors: number[] = []
    for (let at = 0, i = 0; i < 5; i++) {
      cursors.push(at)
      at = (await ahead.read(at))!.last
    }
    expect(ahead.keptBatches).toBeGreaterThan(1)
    for (const at of cursors) await behind.read(at)
    expect(ahead.keptBatches).toBeLessThanOrEqual(1) // the newest, which nobody has passed yet
    behind.leave()
    ahead.leave()
    // The last watcher took the batches with it; a new one starts from nothing.
    const again = SharedBatches.join(journal)
    expect(again.keptBatches).toBe(0)
    again.leave()
  })
})

describe('sseResponse', () => {
  it('delivers at most one event per event-loop turn, even when every event is ready in memory', async () => {
    const frame = new SseFrames(Buffer.alloc(1024, 'x'))
    async function* endless(signal: AbortSignal): AsyncGenerator<SseYield, void, void> {
      while (!signal.aborted) yield frame
    }
    const response = await sseResponse(endless)
    const reader = response.body!.getReader()
    let read = 0
    let turned = false
    setImmediate(() => (turned = true))
    while (!turned && read < 10_000) {
      await reader.read()
      read++
    }
    await reader.cancel()
    // Without a turn between events the reader would take all 10,000 before the immediate ran.
    expect(read).toBeLessThanOrEqual(3)
  })
})
