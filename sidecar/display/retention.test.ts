/** Retention order, truncation at small budgets, chunk limits, alternate capture, history allowance. */
import { describe, expect, it } from 'vitest'
import type { EncodedRow, RowsEvent } from '../../schema/wire/display.ts'
import { historyRowsFor, resizeWithAllowance } from './allowance.ts'
import { planChunks, type PlannedRow } from './retention.ts'
import { encodeRevision } from './revision.ts'
import { decode, emulator } from './testing/harness.ts'

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
    expect(plan.encodedBytes).toBe(plan.chunks.reduce((n, c) => n + Buffer.byteLength(c), 0))
  })

  it.each([400, 700, 1500, 4000])('truncates history to the newest whole rows within a %i-byte budget', (budget) => {
    const plan = planChunks(planned(2, 0, 100), budget, 1 << 16)
    expect(plan.truncated).toBe(true)
    expect(plan.encodedBytes).toBeLessThanOrEqual(budget)
    expect(plan.viewportRows).toBe(2)
    const history = parse(plan.chunks).filter((e) => e.region === 'history').flatMap((e) => e.rows.map(text))
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

  it('degrades a single row larger than the event limit to its text', () => {
    const huge: EncodedRow = [0]
    for (let i = 0; i < 500; i++) huge.push(1 + i, 'x')
    const styles = Array.from({ length: 500 }, (_, i) => ({ fg: `#${i.toString(16).padStart(6, '0')}` }))
    const plan = planChunks([{ region: 'viewport', row: huge, styles }], 1 << 20, 11_000)
    expect(Buffer.byteLength(plan.chunks[0])).toBeLessThanOrEqual(11_000)
    expect(parse(plan.chunks)[0].rows[0]).toEqual([0, 0, 'x'.repeat(500)])
  })
})

describe('encodeRevision', () => {
  it('keeps the last alternate screen after the application leaves it', async () => {
    const e = emulator(40, 6)
    await e.write('$ less file\r\n')
    await e.write('\x1b[?1049h\x1b[H\x1b[2J\x1b[1;33mpage one\x1b[0m\r\n\x1b[44m(END)\x1b[0m')
    await e.write('\x1b[?1049l$ ')
    const revision = encodeRevision(e.tracker)
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
    const full = encodeRevision(e.tracker)
    expect(full).toMatchObject({ truncated: false, historyRows: 2000 - 23 })
    const small = encodeRevision(e.tracker, { budget: 20_000, eventLimit: 4096 })
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
    const last = normal().getLine(normal().baseY + 8)?.translateToString(true)
    expect(last?.startsWith('010499')).toBe(true)
  })
})
