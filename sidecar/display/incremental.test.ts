/**
 * Incremental revisions against the reference: a screen goes through scrolling, trims past the
 * allowance, the alternate screen, scroll regions, ED 3, a reset, resizes and a small budget; after
 * every step a revision is encoded (carrying only the rows the database lacks), persisted, and
 * streamed back the way the API streams it — and must equal, event for event and byte for byte,
 * what the whole-revision encoder before issue 18 makes of the same screen. Every revision kept is
 * still whole at the end; pruning leaves no chunk unreferenced and no revision short of a row; a
 * transaction that fails changes nothing.
 */
import { and, eq, sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { DISPLAY_KEEP_MS } from '../../storage/tuning.ts'
import { displayChunks, displayRevisions } from '../../storage/tables.ts'
import { HistoryPosition } from './history.ts'
import { persistRevision, type StoredHistory } from './persist.ts'
import { encodeRevision } from './revision.ts'
import { RowFacts } from './row-facts.ts'
import { scratchDatabase } from '../../test/support/display/database.ts'
import { emulator, referenceRevision, type ReferenceRevision } from '../../test/support/display/harness.ts'
import { headers, storeProblems, streamed } from '../../test/support/display/store-check.ts'

const scratch = scratchDatabase('termkeep-incremental-')

const E = '\x1b'
type Step = string | { resize: [number, number] } | { budget: number }

function lines(from: number, n: number, wide = false): string {
  let s = ''
  for (let i = from; i < from + n; i++) {
    s += `${E}[38;2;${i % 256};${(i * 3) % 256};90m${String(i).padStart(5, '0')}${E}[0m ${E}[4${i % 8}m  ${E}[0m ${E}[1;3${i % 7}mrow ${i}${wide ? ' 中文字' : ''}${E}[0m ${'·'.repeat(i % 30)}\r\n`
  }
  return s
}

const STEPS: Step[] = [
  'first line\r\n$ ',
  lines(0, 30),
  lines(30, 3),
  lines(33, 1),
  lines(34, 200, true),
  `${E}[?1049h${E}[H${E}[2J${E}[7m editor ${E}[0m\r\n~\r\n${lines(0, 40)}`, // the alternate screen scrolls no history
  `${E}[?1049l`,
  lines(234, 500), // past the allowance: the oldest rows are trimmed
  `${E}[1;10r${E}[10;1H${lines(734, 15)}${E}[r${E}[24;1H`, // a region from the top: its top row goes to history
  `${E}[5;10r${E}[10;1H${lines(749, 15)}${E}[r${E}[24;1H`, // a region below the top: no history
  lines(764, 40),
  { resize: [50, 20] },
  lines(804, 30),
  { resize: [50, 26] }, // more rows pull history back into the viewport
  lines(834, 5),
  `${E}[3J`, // ED 3: history cleared
  lines(839, 60),
  `${E}c`, // RIS
  lines(899, 80),
  { budget: 30_000 }, // a small budget: older history is left out
  lines(979, 20),
  { budget: 64 * 1024 * 1024 },
  lines(999, 3),
]

describe('incremental revisions', () => {
  // `counted`: the history is counted from row facts and the last packing reused, as the emulator
  // worker does (row-facts.ts, revision.ts), instead of encoding every row.
  it.each(['encoded', 'counted'])(
    'stream exactly what the whole-revision encoder made, step after step, writing only what is new (%s)',
    async (mode) => {
      const e = emulator(60, 24, 600)
      const position = new HistoryPosition(e.terminal)
      const fast = mode === 'counted' ? { facts: new RowFacts(), reuse: {} } : {}
      const terminal = `t-${mode}`
      let stored: StoredHistory | undefined
      let budget = 64 * 1024 * 1024
      const references = new Map<number, ReferenceRevision>()
      const written: Array<{ full: number; carried: number; rows: number }> = []
      const old = Date.now() - DISPLAY_KEEP_MS - 60_000
      for (const [i, step] of STEPS.entries()) {
        if (typeof step === 'string') await e.write(step)
        else if ('resize' in step) e.terminal.resize(...step.resize)
        else {
          budget = step.budget
          continue
        }
        const revision = encodeRevision(e.tracker, position, {
          sequence: i,
          budget,
          stored: stored && { token: stored.token, from: stored.end },
          ...fast,
        })
        const reference = referenceRevision(e.tracker, { sequence: i, budget })
        // The older revisions are old enough to prune, so pruning runs along the way.
        const result = await persistRevision(scratch.storage.db, 's', terminal, revision, { stored, now: old + i })
        stored = result.stored
        references.set(result.revision, reference)
        written[i] = { full: reference.encodedBytes, carried: result.bytes, rows: revision.history.rows.length }
        const [header] = (await headers(scratch.storage.db, 's', terminal)).slice(-1)
        const { begin, bodies } = await streamed(scratch.storage.db, header)
        expect(bodies, `step ${i}`).toEqual(reference.chunks)
        expect(begin, `step ${i}`).toMatchObject({
          chunks: reference.chunks.length,
          encodedBytes: reference.encodedBytes,
          viewportRows: reference.viewportRows,
          alternateRows: reference.alternateRows,
          historyRows: reference.historyRows,
          truncated: reference.truncated,
          ...reference.meta,
        })
        expect(await storeProblems(scratch.storage.db, 's', terminal), `step ${i}`).toEqual([])
      }
      // Every revision still kept streams what it streamed when it was written.
      const kept = await headers(scratch.storage.db, 's', terminal)
      expect(kept.length).toBeGreaterThanOrEqual(4)
      for (const header of kept)
        expect((await streamed(scratch.storage.db, header)).bodies).toEqual(references.get(header.revision)!.chunks)
      // A step that scrolls a few rows into a long history writes a small part of the whole, and a
      // step after a resize or reset writes its whole history again.
      const small = written[STEPS.indexOf(lines(764, 40))]
      expect(small.rows).toBe(40)
      expect(small.carried).toBeLessThan(small.full / 4)
      const afterResize = written[STEPS.findIndex((s) => typeof s === 'object' && 'resize' in s)]
      expect(afterResize.rows).toBeGreaterThan(500)
      const total = written.reduce((n, w) => n + (w?.carried ?? 0), 0)
      const whole = written.reduce((n, w) => n + (w?.full ?? 0), 0)
      expect(total).toBeLessThan(whole * 0.6)
    },
  )

  it('a transaction that fails changes nothing, and the writer state it would have reached is not taken', async () => {
    const e = emulator(40, 6)
    const position = new HistoryPosition(e.terminal)
    await e.write(lines(0, 50))
    const first = await persistRevision(scratch.storage.db, 's', 'fail', encodeRevision(e.tracker, position))
    const before = await headers(scratch.storage.db, 's', 'fail')
    const rows = async () =>
      (await scratch.storage.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM display_history WHERE terminal_id = 'fail'`))[0].n
    const chunkCount = await rows()
    await e.write(lines(50, 80))
    const next = encodeRevision(e.tracker, position, { stored: { token: first.stored.token, from: first.stored.end } })
    // The revision's last statement (its ledger entry) fails: nothing of it may stay.
    await scratch.storage.db.run(sql`INSERT INTO data_migrations (name, detail) VALUES ('taken', 'first')`)
    await expect(
      persistRevision(scratch.storage.db, 's', 'fail', next, { stored: first.stored, ledger: { name: 'taken', detail: 'second' } }),
    ).rejects.toThrow()
    expect(await headers(scratch.storage.db, 's', 'fail')).toEqual(before)
    expect(await rows()).toBe(chunkCount)
    expect(await storeProblems(scratch.storage.db, 's', 'fail')).toEqual([])
    // The same revision, written again from the state before, lands whole.
    await persistRevision(scratch.storage.db, 's', 'fail', next, { stored: first.stored })
    const [header] = (await headers(scratch.storage.db, 's', 'fail')).slice(-1)
    expect((await streamed(scratch.storage.db, header)).bodies).toEqual(referenceRevision(e.tracker).chunks)
  })

  it("reads an older deployment's whole revision (format 1) as it was, and prunes it beside newer ones", async () => {
    const db = scratch.storage.db
    const e = emulator(40, 6)
    await e.write(lines(0, 80))
    const old = referenceRevision(e.tracker, { sequence: 3 })
    // Written as the encoder before incremental revisions wrote it: every event in display_chunks.
    await db.insert(displayChunks).values(old.chunks.map((body, chunk) => ({ sessionId: 's', terminalId: 'v1', revision: 1, chunk, body })))
    const { meta } = old
    await db.insert(displayRevisions).values({
      sessionId: 's',
      terminalId: 'v1',
      revision: 1,
      cols: meta.cols,
      rows: meta.rows,
      cursorRow: meta.cursor.row,
      cursorCol: meta.cursor.col,
      cursorVisible: meta.cursor.visible,
      cursorStyle: meta.cursor.style,
      cursorBlink: meta.cursor.blink,
      title: meta.title,
      alternateScreen: meta.alternateScreen,
      palette: meta.palette,
      inputModes: meta.inputModes,
      sequence: meta.sequence,
      viewportRows: old.viewportRows,
      alternateRows: old.alternateRows,
      historyRows: old.historyRows,
      truncated: old.truncated,
      encodedBytes: old.encodedBytes,
      chunkCount: old.chunks.length,
      origin: 'live',
      createdAt: Date.now() - DISPLAY_KEEP_MS - 60_000,
    })
    const [legacy] = await headers(db, 's', 'v1')
    expect(legacy.format).toBe(1)
    expect((await streamed(db, legacy)).bodies).toEqual(old.chunks)
    // Newer revisions, incremental, beside it; once enough of them are written it is pruned whole.
    const position = new HistoryPosition(e.terminal)
    let stored: StoredHistory | undefined
    for (let i = 0; i < 5; i++) {
      await e.write(lines(80 + i * 10, 10))
      stored = (
        await persistRevision(
          db,
          's',
          'v1',
          encodeRevision(e.tracker, position, { stored: stored && { token: stored.token, from: stored.end } }),
          { stored },
        )
      ).stored
    }
    const kept = await headers(db, 's', 'v1')
    expect(kept.map((h) => h.revision)).not.toContain(1)
    const left = await db
      .select({ r: displayChunks.revision })
      .from(displayChunks)
      .where(and(eq(displayChunks.terminalId, 'v1'), eq(displayChunks.revision, 1)))
    expect(left).toEqual([])
    expect((await streamed(db, kept.at(-1)!)).bodies).toEqual(referenceRevision(e.tracker).chunks)
    expect(await storeProblems(db, 's', 'v1')).toEqual([])
  })

  it('refuses a revision that lacks rows the database does not hold', async () => {
    const e = emulator(40, 6)
    const position = new HistoryPosition(e.terminal)
    await e.write(lines(0, 30))
    const first = await persistRevision(scratch.storage.db, 's', 'gap', encodeRevision(e.tracker, position))
    await e.write(lines(30, 30))
    // Encoded as if the database held more than it does.
    const ahead = encodeRevision(e.tracker, position, { stored: { token: first.stored.token, from: first.stored.end + 10 } })
    await expect(persistRevision(scratch.storage.db, 's', 'gap', ahead, { stored: first.stored })).rejects.toThrow(/lacks them/)
    expect(await headers(scratch.storage.db, 's', 'gap')).toHaveLength(1)
  })
})
