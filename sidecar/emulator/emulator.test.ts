/** The emulator worker fed from a real journal: snapshots round-trip into a fresh terminal. */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import headless from '@xterm/headless'
import { afterAll, describe, expect, it } from 'vitest'
import { Journal } from '../journal/journal.ts'
import { cursorHidden } from '../../common/xterm/snapshot-suffix.ts'
import { EmulatorPool, type Emulator } from './emulator.ts'
import { historyRows } from './protocol.ts'
import { useUnicode11 } from '../../common/xterm/widths.ts'

const { Terminal } = headless
const dir = mkdtempSync(join(tmpdir(), 'termkeep-emulator-'))
const pool = new EmulatorPool(1)
afterAll(() => pool.close())

let n = 0
function screenOf(cols: number, rows: number): { journal: Journal; emulator: Emulator } {
  const journal = new Journal(join(dir, `t${++n}.spool`), { cols, rows })
  return { journal, emulator: pool.open(`s/t${n}`, journal) }
}

async function restore(screen: string, cols: number, rows: number) {
  const fresh = new Terminal({ cols, rows, allowProposedApi: true, scrollback: historyRows(cols) })
  useUnicode11(fresh)
  await new Promise<void>((resolve) => fresh.write(screen, resolve))
  return fresh
}

function text(terminal: InstanceType<typeof Terminal>): string[] {
  const buffer = terminal.buffer.active
  const lines: string[] = []
  for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i)!.translateToString(true))
  return lines
}

/** The visible rows as text with each non-blank cell's colour and boldness. */
function cells(terminal: InstanceType<typeof Terminal>, rows: number): string[] {
  const buffer = terminal.buffer.active
  const out: string[] = []
  for (let y = buffer.length - rows; y < buffer.length; y++) {
    const line = buffer.getLine(y)!
    let row = ''
    for (let x = 0; x < terminal.cols; x++) {
      const cell = line.getCell(x)!
      const chars = cell.getChars() || ' '
      row += chars === ' ' ? ' ' : `${chars}[${cell.getFgColor()}${cell.isBold() ? 'b' : ''}]`
    }
    out.push(row.trimEnd())
  }
  return out
}

async function caughtUp(emulator: Emulator, journal: Journal): Promise<void> {
  while (emulator.appliedSequence < journal.lastSequence) await new Promise((r) => setTimeout(r, 10))
}

describe('emulator snapshot', () => {
  const cases: Array<[string, string, number, number]> = [
    ['plain text, cursor mid-row', 'hello\r\nwor', 10, 4],
    ['full-row write leaves wrap pending', 'hello\r\n0123456789', 10, 4],
    ['full-row write then hidden cursor', 'ab\r\n\x1b[31m012345678\x1b[44m9\x1b[?25l', 10, 4],
    ['wide char at the end of the row', 'x\r\n12345678中', 10, 4],
    ['cursor moved away, hidden then shown', '\x1b[?25l0123456789abc\x1b[2;5H\x1b[?25h', 10, 4],
    ['scrolling history', Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\r\n'), 20, 5],
    ['alternate screen', 'normal\r\n\x1b[?1049halt here\x1b[3;2H', 12, 4],
  ]
  it.each(cases)('%s: restores text, cursor position and visibility exactly', async (_name, input, cols, rows) => {
    const { journal, emulator } = screenOf(cols, rows)
    journal.appendData(Buffer.from(input))
    journal.flush()
    await caughtUp(emulator, journal)
    const snapshot = await emulator.snapshot()
    expect(snapshot.sequence).toBe(journal.lastSequence)
    const original = await restore(input, cols, rows) // the same bytes through a direct parser
    const restored = await restore(snapshot.screen, snapshot.cols, snapshot.rows)
    expect(text(restored).slice(-rows)).toEqual(text(original).slice(-rows))
    expect([restored.buffer.active.cursorX, restored.buffer.active.cursorY]).toEqual([
      original.buffer.active.cursorX,
      original.buffer.active.cursorY,
    ])
    expect(cursorHidden(restored)).toBe(cursorHidden(original))
    expect(restored.buffer.active.type).toBe(original.buffer.active.type)
    emulator.dispose()
  })

  // What the program prints next must land as it would have on the original screen.
  const continued: Array<[string, string, string, number, number]> = [
    ['wrap pending with a colour set', '\x1b[31m0123456789', 'after', 10, 4],
    ['a colour set after the last cell', 'ab\x1b[1;34m', 'cd', 10, 4],
    ['a scroll region', 'header\x1b[5;1Hstatus\x1b[2;4r\x1b[4;1H', 'l1\nl2\nl3\nl4\n', 20, 5],
    ['a saved cursor', '\x1b[1;3H\x1b[32m\x1b7\x1b[0m\x1b[4;1Hbottom', '\x1b8Z', 10, 4],
    [
      'a saved cursor below history',
      `${Array.from({ length: 30 }, (_, i) => `h${i}`).join('\r\n')}\x1b[2;3H\x1b7\x1b[4;1H`,
      '\x1b8Z',
      10,
      4,
    ],
    ['origin mode in a scroll region', 'top\x1b[4;1Hbottom\x1b[2;3r\x1b[?6h\x1b[1;2H', 'xy', 10, 4],
    ['line drawing (G0)', 'x\x1b(0', 'lqk\x1b(Bq', 10, 4],
    ['line drawing (G1, shifted out)', 'x\x1b)0\x0e', 'lqk\x0fq', 10, 4],
  ]
  it.each(continued)('%s: output after the snapshot lands as on the original screen', async (_name, input, next, cols, rows) => {
    const { journal, emulator } = screenOf(cols, rows)
    journal.appendData(Buffer.from(input))
    journal.flush()
    await caughtUp(emulator, journal)
    const snapshot = await emulator.snapshot()
    const original = await restore(input + next, cols, rows)
    const restored = await restore(snapshot.screen + next, snapshot.cols, snapshot.rows)
    expect(cells(restored, rows)).toEqual(cells(original, rows))
    expect([restored.buffer.active.cursorX, restored.buffer.active.cursorY]).toEqual([
      original.buffer.active.cursorX,
      original.buffer.active.cursorY,
    ])
    emulator.dispose()
  })

  it('applies resizes in order and answers at a known sequence', async () => {
    const { journal, emulator } = screenOf(80, 24)
    journal.appendData(Buffer.from('before\r\n'))
    journal.appendResize(40, 10)
    journal.appendData(Buffer.from('after'))
    journal.flush()
    await caughtUp(emulator, journal)
    const snapshot = await emulator.snapshot()
    expect(snapshot).toMatchObject({ sequence: 3, cols: 40, rows: 10 })
    const restored = await restore(snapshot.screen, 40, 10)
    expect(text(restored).join('\n')).toContain('after')
    expect(await emulator.request('no-such-kind').catch((e: Error) => e.message)).toMatch(/unknown emulator request/)
    emulator.dispose()
  })
})
