/** The journal against a real spool file: records, exact cursors, waiting, retirement, I/O errors. */
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { MAX_OUTPUT_ITEM_BYTES, MAX_RECORD_RAW_BYTES } from '../../schema/limits.ts'
import type { OutputItem } from '../../schema/wire/output.ts'
import { Journal } from './journal.ts'
import { RecordIndex } from '../../local/journal/record-index.ts'
import { removeSpoolTree } from './spool.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-journal-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const journal = () => new Journal(join(dir, `j${++n}`, 'spool'), { cols: 80, rows: 24 })

/** Reads everything after `after` as a token list: bytes (per byte) and resizes. */
async function suffix(j: Journal, after: number): Promise<string[]> {
  const tokens: string[] = []
  for (let cursor = after; ; ) {
    const items = await j.readItems(cursor, 7)
    if (items.length === 0) return tokens
    for (const item of items) {
      expect(item.sequence).toBeGreaterThan(cursor)
      expect(JSON.stringify(item).length).toBeLessThanOrEqual(MAX_OUTPUT_ITEM_BYTES)
      tokens.push(...tokensOf(item))
      cursor = item.sequence
    }
  }
}

function tokensOf(item: OutputItem): string[] {
  return item.kind === 'resize' ? [`R${item.cols}x${item.rows}`] : [...Buffer.from(item.data, 'base64').toString('latin1')]
}

describe('Journal', () => {
  it('splits a large read into native records and gives every cursor its exact suffix', async () => {
    const j = journal()
    const big = Buffer.alloc(MAX_RECORD_RAW_BYTES * 2 + 5, 'x')
    j.appendData(Buffer.from('ab'))
    j.flush()
    expect(j.lastSequence).toBe(1)
    j.appendData(big)
    expect(j.lastSequence).toBe(1) // taken, journaled at the end of the turn
    await new Promise((resolve) => setImmediate(resolve))
    expect(j.lastSequence).toBe(4) // 48,000 + 48,000 + 5
    expect(j.appendResize(100, 30)).toBe(5)
    j.appendData(Buffer.from('c'))
    j.flush()
    j.appendData(Buffer.from('de'))
    j.flush()
    const native: string[][] = [
      ['a', 'b'],
      [...'x'.repeat(MAX_RECORD_RAW_BYTES)],
      [...'x'.repeat(MAX_RECORD_RAW_BYTES)],
      [...'xxxxx'],
      ['R100x30'],
      ['c'],
      ['d', 'e'],
    ]
    for (let after = 0; after <= j.lastSequence; after++) {
      expect(await suffix(j, after)).toEqual(native.slice(after).flat())
    }
  })

  it('coalesces small reads into items and keeps mid-batch cursors exact', async () => {
    const j = journal()
    for (let i = 0; i < 50; i++) {
      j.appendData(Buffer.from(String.fromCharCode(65 + (i % 26)).repeat(100)))
      j.flush()
    }
    const items = await j.readItems(0, 100)
    expect(items).toHaveLength(1)
    expect(items[0].sequence).toBe(50)
    const mid = await j.readItems(17, 100)
    expect(Buffer.from((mid[0] as { data: string }).data, 'base64').length).toBe(33 * 100)
    expect(
      Buffer.from((mid[0] as { data: string }).data, 'base64')
        .subarray(0, 1)
        .toString(),
    ).toBe(String.fromCharCode(65 + 17))
  })

  it('produces the same items however a reader pages', async () => {
    const j = journal()
    for (let i = 0; i < 400; i++) {
      j.appendData(Buffer.alloc(4000 + (i % 7) * 100, i))
      j.flush()
    }
    const whole: number[] = []
    for (let c = 0; ; ) {
      const items = await j.readItems(c, 1000)
      if (!items.length) break
      whole.push(...items.map((i) => i.sequence))
      c = items.at(-1)!.sequence
    }
    const small: number[] = []
    for (let c = 0; ; ) {
      const items = await j.readItems(c, 1)
      if (!items.length) break
      small.push(items[0].sequence)
      c = items[0].sequence
    }
    expect(small).toEqual(whole)
  })

  it('wakes a waiter on append and on end, and times out otherwise', async () => {
    const j = journal()
    expect(await j.wait(0, 20)).toBe('timeout')
    const woke = j.wait(0, 5_000)
    j.appendData(Buffer.from('x'))
    expect(await woke).toBe('changed')
    expect(j.lastSequence).toBe(1)
    const ended = j.wait(1, 5_000)
    j.end()
    expect(await ended).toBe('changed')
    expect(() => j.appendData(Buffer.from('y'))).toThrow(/after EOF/)
  })

  it('lets an attached reader drain after retirement and refuses new ones', async () => {
    const j = journal()
    j.appendData(Buffer.from('kept'))
    j.end() // flushes what was taken
    const release = j.attach()
    j.retire()
    expect(() => j.attach()).toThrow(expect.objectContaining({ code: 'terminal/unavailable' }))
    expect(await suffix(j, 0)).toEqual([...'kept'])
    release()
    // The spool is gone now: a read is a real I/O error, never an empty answer.
    await expect(j.readItems(0, 1)).rejects.toThrow()
  })

  it('removes a spool directory with its last spool, and leaves one that holds another', async () => {
    const shared = join(dir, 'session-dir')
    const a = new Journal(join(shared, 'a'), { cols: 80, rows: 24 })
    const b = new Journal(join(shared, 'b'), { cols: 80, rows: 24 })
    a.retire()
    expect(readdirSync(shared)).toEqual(['b', 'b.index'])
    b.retire()
    expect(existsSync(shared)).toBe(false)
  })

  it('empties the spool before unlinking it: a hard link made to it keeps no byte of the output', async () => {
    const path = join(dir, 'linked', 'spool')
    const j = new Journal(path, { cols: 80, rows: 24 })
    j.appendData(Buffer.from('secret output'))
    j.end()
    const link = join(dir, 'link-of-a-journal')
    linkSync(path, link)
    expect(readFileSync(link, 'utf8')).toBe('secret output')
    const release = j.attach()
    j.retire()
    expect(readFileSync(link, 'utf8')).toBe('secret output') // a reader still drains it
    release()
    expect(existsSync(path)).toBe(false)
    expect(readFileSync(link)).toHaveLength(0)
  })

  it("removes an earlier sidecar's spool tree emptied, and never truncates what a link planted in it names", () => {
    const tree = join(dir, 'old-spool')
    mkdirSync(join(tree, 'g1', 's1'), { recursive: true })
    writeFileSync(join(tree, 'g1', 's1', 't1.journal'), 'left behind')
    const link = join(dir, 'link-of-an-old-journal')
    linkSync(join(tree, 'g1', 's1', 't1.journal'), link)
    const victim = join(dir, 'not-termkeeps')
    writeFileSync(victim, 'keep me')
    symlinkSync(victim, join(tree, 'g1', 's1', 'planted.journal'))
    removeSpoolTree(tree)
    expect(existsSync(tree)).toBe(false)
    expect(readFileSync(link)).toHaveLength(0)
    expect(readFileSync(victim, 'utf8')).toBe('keep me')
  })

  it('drops bytes that arrive after a retirement without EOF (shutdown) instead of writing a closed fd', async () => {
    const j = journal()
    j.appendData(Buffer.from('before'))
    j.retire() // flushes what was taken
    j.appendData(Buffer.from('late'))
    await new Promise((resolve) => setImmediate(resolve))
    expect(j.lastSequence).toBe(1)
  })

  it('keeps memory to the index: 17 bytes per record, whatever the records hold', () => {
    const j = journal()
    const chunk = Buffer.alloc(MAX_RECORD_RAW_BYTES, 1)
    for (let i = 0; i < 2048; i++) j.appendData(chunk) // ~98 MB to the spool, flushed every 1 MiB
    j.flush()
    expect(j.lastSequence).toBe(2048)
    expect(j.indexBytes).toBeLessThanOrEqual(2048 * 17)
  })

  it("records each record's arrival, monotonic milliseconds since the journal's start", async () => {
    const j = journal()
    const before = Date.now()
    j.appendData(Buffer.from('first'))
    j.flush()
    await new Promise((resolve) => setTimeout(resolve, 60))
    j.appendResize(100, 30)
    j.appendData(Buffer.alloc(MAX_RECORD_RAW_BYTES + 10, 1)) // one flush, two records
    j.flush()
    expect(j.lastSequence).toBe(4)
    expect(j.startedAt).toBeLessThanOrEqual(before)
    const times = [1, 2, 3, 4].map((s) => j.timeAt(s))
    expect(times[0]).toBeLessThan(1000)
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(55)
    expect(times[3]).toBe(times[2]) // split from one read: the same arrival
    expect(times[2]).toBeGreaterThanOrEqual(times[1])
  })

  it('keeps arrival times exact past 2^32 ms (49.7 days), and across a longer silence', () => {
    const index = new RecordIndex()
    const day = 86_400_000
    const at = [0, 5, 2 ** 32 - 1, 2 ** 32, 60 * day, 200 * day, 200 * day + 1]
    at.forEach((ms, i) => index.addData(i, 1, ms + 0.75))
    expect(at.map((_, i) => index.time(i + 1))).toEqual(at)
  })
})
