/** The emulator worker fed from a real journal: snapshots round-trip into a fresh terminal. */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import headless from '@xterm/headless'
import { afterAll, describe, expect, it } from 'vitest'
import { Journal } from '../journal/journal.ts'
import { cursorHidden } from './cursor.ts'
import { EmulatorPool, type Emulator } from './emulator.ts'
import { historyRows } from './protocol.ts'

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
  await new Promise<void>((resolve) => fresh.write(screen, resolve))
  return fresh
}

function text(terminal: InstanceType<typeof Terminal>): string[] {
  const buffer = terminal.buffer.active
  const lines: string[] = []
  for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i)!.translateToString(true))
  return lines
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
