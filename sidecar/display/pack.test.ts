/**
 * The packer (common/display/pack.ts): retention order, truncation at small budgets, event limits,
 * rows too large for one event (split, never stripped), and its equality with the packer before
 * issue 18 for everything that fits; alternate capture and the history allowance.
 */
import { describe, expect, it } from 'vitest'
import { ChunkPacker, planChunks as plan, type PlannedRow } from '../../common/display/pack.ts'
import { utf8Length } from '../../schema/utf8.ts'
import type { CellStyle, EncodedRow, RowsEvent } from '../../schema/wire/display.ts'
import { decodeDisplay } from '../../common/display/decode.ts'
import { historyRowsFor, resizeWithAllowance } from './allowance.ts'
import { decode, emulator, referenceRevision, transferOf } from '../../test/support/display/harness.ts'
import { legacyPlanChunks } from '../../test/support/display/legacy-plan.ts'

const planChunks = (rows: PlannedRow[], budget: number, limit: number) => {
  const p = plan(rows, budget, limit)
  return { ...p, chunks: p.bodies }
}

const text = (row: EncodedRow) => row.filter((_, i) => i > 0 && i % 2 === 0).join('')
const rowOf = (s: string, style = 0): EncodedRow => [0, style, s]

function planned(viewport: number, alternate: number, history: number): PlannedRow[] {
  const rows: PlannedRow[] = []
  for (let i = 0; i < viewport; i++) rows.push({ region: 'viewport', row: rowOf(`v${i}`), styles: [] })
  for (let i = 0; i < alternate; i++) rows.push({ region: 'alternate', row: rowOf(`a${i}`), styles: [] })
  for (let i = 0; i < history; i++) rows.push({ region: 'history', row: rowOf(`h${i}`.padEnd(40, '.'), 1 + i), styles: [{ fg: i % 256 }] })
  return rows
}

const parse = (chunks: string[]) => chunks.map((c) => JSON.parse(c) as RowsEvent)

describe('planChunks', () => {
  it('keeps viewport, then alternate, then history newest first, each region indexed from 0', () => {
    const plan = planChunks(planned(3, 2, 4), 1 << 20, 1 << 16)
    const events = parse(plan.chunks)
    expect(events.map((e) => [e.region, e.index, e.rows.map(text)])).toEqual([
      ['viewport', 0, ['v0', 'v1', 'v2']],
      ['alternate', 0, ['a0', 'a1']],
      ['history', 0, ['h0', 'h1', 'h2', 'h3'].map((s) => s.padEnd(40, '.'))],
    ])
    expect(plan).toMatchObject({ viewportRows: 3, alternateRows: 2, historyRows: 4, truncated: false })
    expect(plan.encodedBytes).toBe(plan.chunks.reduce((n: number, c: string) => n + Buffer.byteLength(c), 0))
  })

  it.each([400, 700, 1500, 4000])('truncates history to the newest whole rows within a %i-byte budget', (budget) => {
    const plan = planChunks(planned(2, 0, 100), budget, 1 << 16)
    expect(plan.truncated).toBe(true)
    expect(plan.encodedBytes).toBeLessThanOrEqual(budget)
    expect(plan.viewportRows).toBe(2)
    const history = parse(plan.chunks)
      .filter((e) => e.region === 'history')
      .flatMap((e) => e.rows.map(text))
    expect(history).toEqual(Array.from({ length: plan.historyRows }, (_, i) => `h${i}`.padEnd(40, '.')))
    // One more row would not have fitted.
    const more = planChunks(planned(2, 0, plan.historyRows + 1), budget, 1 << 16)
    expect(more.truncated).toBe(true)
  })

  it('keeps the viewport even when it alone exceeds the budget', () => {
    const plan = planChunks(planned(5, 3, 10), 10, 1 << 16)
    expect(plan).toMatchObject({ viewportRows: 5, alternateRows: 3, historyRows: 0, truncated: true })
  })

  it('is not truncated when everything fits exactly', () => {
    const full = planChunks(planned(2, 0, 10), 1 << 20, 1 << 16)
    const exact = planChunks(planned(2, 0, 10), full.encodedBytes + 2, 1 << 16)
    expect(exact.truncated).toBe(false)
    expect(exact.historyRows).toBe(10)
  })

  it('packs rows into events of at most the event limit and defines each style before its first use', () => {
    const plan = planChunks(planned(4, 4, 300), 1 << 20, 1024)
    const events = parse(plan.chunks)
    expect(events.length).toBeGreaterThan(10)
    let defined = 1
    for (const [i, e] of events.entries()) {
      expect(Buffer.byteLength(plan.chunks[i])).toBeLessThanOrEqual(1024)
      expect(e.styleBase).toBe(defined)
      defined += e.styles.length
      for (const row of e.rows) for (let j = 1; j < row.length; j += 2) expect(row[j] as number).toBeLessThan(defined)
    }
    expect(events.filter((e) => e.region === 'history').reduce((n, e) => n + e.rows.length, 0)).toBe(300)
  })

  it('packs exactly as the packer before issue 18 whenever every row fits an event', () => {
    for (const [limit, budget] of [
      [1 << 16, 1 << 26],
      [1024, 1 << 20],
      [300, 20_000],
      [4096, 9000],
    ]) {
      const rows = planned(7, 5, 400)
      const now = planChunks(rows, budget, limit)
      const before = legacyPlanChunks(rows, budget, limit)
      expect(now.chunks).toEqual(before.chunks)
      expect(now).toMatchObject({ encodedBytes: before.encodedBytes, truncated: before.truncated, historyRows: before.historyRows })
    }
  })

  it('continues another packing exactly as one packer would (the API continues the head events)', () => {
    for (const budget of [1 << 20, 6000, 4013, 4014, 4015, 4016]) {
      const rows = planned(6, 3, 200)
      const whole = planChunks(rows, budget, 1024)
      const head: string[] = []
      const first = new ChunkPacker(budget, 1024, (b) => head.push(b))
      rows.filter((r) => r.region !== 'history').forEach((r) => first.add(r))
      const rest: string[] = []
      const second = new ChunkPacker(budget, 1024, (b) => rest.push(b), first.state())
      for (const r of rows.filter((r) => r.region === 'history')) if (!second.add(r)) break
      const summary = second.finish()
      expect([...head, ...rest]).toEqual(whole.chunks)
      expect(summary).toMatchObject({
        chunks: whole.chunks.length,
        encodedBytes: whole.encodedBytes,
        truncated: whole.truncated,
        historyRows: whole.historyRows,
      })
      // Counting without building the bodies gives the same totals (the sidecar's way).
      const counted = new ChunkPacker(budget, 1024, undefined, first.state())
      for (const r of rows.filter((r) => r.region === 'history')) if (!counted.add(r)) break
      expect(counted.finish()).toMatchObject({
        chunks: whole.chunks.length,
        encodedBytes: whole.encodedBytes,
        historyRows: whole.historyRows,
      })
    }
  })

  it('splits a row too large for one event over several, styles first, and loses nothing', () => {
    const huge: EncodedRow = [1]
    const styles: CellStyle[] = []
    for (let i = 0; i < 900; i++) {
      huge.push(1 + i, i % 3 === 0 ? ['中', ''] : 'x')
      styles.push({ fg: `#${(i * 4099).toString(16).padStart(6, '0').slice(-6)}`, bg: i % 256, ul: '#102030', a: 8, u: 3 })
    }
    const rows: PlannedRow[] = [
      { region: 'viewport', row: [0, 0, 'before'], styles: [] },
      { region: 'viewport', row: huge, styles },
      { region: 'viewport', row: [0, 0, 'after'], styles: [] },
    ]
    const limit = 8192
    const p = planChunks(rows, 1 << 26, limit)
    for (const c of p.chunks) expect(utf8Length(c)).toBeLessThanOrEqual(limit)
    expect(p.chunks.length).toBeGreaterThan(6)
    expect(p.encodedBytes).toBe(p.chunks.reduce((n, c) => n + utf8Length(c), 0))
    expect(p.cutCells).toBe(0)
    const events = parse(p.chunks)
    expect(events.some((e) => e.rows.length === 0 && e.styles.length > 0)).toBe(true)
    expect(events.some((e) => e.partial)).toBe(true)
    // Decoded, the row has every cell with its own style, and the rows around it are intact.
    const begin = { ...transferOf(referenceRevision(emulator(10, 3).tracker)).begin, chunks: events.length }
    const display = decodeDisplay(begin, events, { revision: 1, truncated: false })
    expect(display.viewport.map((r) => r.cells.filter((c) => c.width !== 0).length)).toEqual([6, 900, 5])
    expect(display.viewport[1].wrapped).toBe(true)
    const cells = display.viewport[1].cells.filter((c) => c.width !== 0)
    cells.forEach((cell, i) => {
      expect(display.styles[cell.style]).toEqual(styles[i])
      expect(cell.chars).toBe(i % 3 === 0 ? '中' : 'x')
      expect(cell.width).toBe(i % 3 === 0 ? 2 : 1)
    })
  })

  it('cuts only a single cell larger than an event, and counts it', () => {
    const pile = `e${'\u0301'.repeat(9000)}`
    const p = planChunks([{ region: 'viewport', row: [0, 0, 'ab', 0, [pile], 0, 'cd'], styles: [] }], 1 << 26, 4096)
    for (const c of p.chunks) expect(utf8Length(c)).toBeLessThanOrEqual(4096)
    expect(p.cutCells).toBe(1)
    const events = parse(p.chunks)
    const begin = { ...transferOf(referenceRevision(emulator(10, 3).tracker)).begin, chunks: events.length }
    const cells = decodeDisplay(begin, events, { revision: 1, truncated: false }).viewport[0].cells
    expect(cells.map((c) => c.chars[0])).toEqual(['a', 'b', 'e', 'c', 'd'])
  })
})

describe('the reference encoder', () => {
  it('keeps the last alternate screen after the application leaves it', async () => {
    const e = emulator(40, 6)
    await e.write('$ less file\r\n')
    await e.write('\x1b[?1049h\x1b[H\x1b[2J\x1b[1;33mpage one\x1b[0m\r\n\x1b[44m(END)\x1b[0m')
    await e.write('\x1b[?1049l$ ')
    const revision = referenceRevision(e.tracker)
    expect(revision.meta.alternateScreen).toBe(false)
    expect(revision.alternateRows).toBe(6)
    const display = decode(revision)
    const rowText = (r: { cells: { chars: string }[] }) => r.cells.map((c) => c.chars).join('')
    expect(display.alternate.map(rowText).slice(0, 2)).toEqual(['page one', '(END)'])
    expect(display.styles[display.alternate[0].cells[0].style]).toEqual({ fg: 3, a: 1 })
    expect(display.styles[display.alternate[1].cells[0].style]).toEqual({ bg: 4 })
    expect(display.viewport.map(rowText).slice(0, 2)).toEqual(['$ less file', '$ '])
  })

  it('truncates a long coloured history at a small budget and keeps the newest rows', async () => {
    const e = emulator(80, 24)
    let out = ''
    for (let i = 0; i < 2000; i++) out += `\x1b[3${i % 8}mrow ${i}\x1b[0m\r\n`
    await e.write(out)
    const full = referenceRevision(e.tracker)
    expect(full).toMatchObject({ truncated: false, historyRows: 2000 - 23 })
    const small = referenceRevision(e.tracker, { budget: 20_000, eventLimit: 4096 })
    expect(small.truncated).toBe(true)
    expect(small.encodedBytes).toBeLessThanOrEqual(20_000)
    const history = decode(small).history
    expect(history.length).toBe(small.historyRows)
    const newest = history[history.length - 1].cells.map((c) => c.chars).join('')
    expect(newest).toBe('row 1976')
  })
})

describe('history allowance', () => {
  it('is floor(800000 / cols) rows', () => {
    expect(historyRowsFor(80)).toBe(10_000)
    expect(historyRowsFor(132)).toBe(6060)
    expect(historyRowsFor(1024)).toBe(781)
  })

  it('is recomputed for the new width before the emulator reflows', async () => {
    const e = emulator(80, 10)
    expect(e.terminal.options.scrollback).toBe(10_000)
    let out = ''
    for (let i = 0; i < 10_500; i++) out += `${String(i).padStart(6, '0')}${'-'.repeat(74)}\r\n`
    await e.write(out)
    const normal = () => e.terminal.buffer.normal
    expect(normal().length - 10).toBe(10_000)
    resizeWithAllowance(e.terminal, 40, 10)
    // Each 80-column row re-wraps into two: the 20,000-row allowance keeps all of them.
    expect(e.terminal.options.scrollback).toBe(20_000)
    expect(normal().length).toBeGreaterThanOrEqual(20_000)
    resizeWithAllowance(e.terminal, 160, 10)
    expect(e.terminal.options.scrollback).toBe(5000)
    expect(normal().length - 10).toBeLessThanOrEqual(5000)
    const last = normal()
      .getLine(normal().baseY + 8)
      ?.translateToString(true)
    expect(last?.startsWith('010499')).toBe(true)
  })
})
