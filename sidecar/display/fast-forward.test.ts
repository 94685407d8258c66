/**
 * Fast-forward equivalence: a stream fed to one terminal as is and to another through the planner
 * (split into arbitrary journal records, windows and resizes) leaves identical buffers, cursor,
 * attributes and modes — and the planner really skips when output floods past the allowance.
 */
import { describe, expect, it } from 'vitest'
import { FastForward, type FeedRecord } from './fast-forward.ts'
import { bufferDiff, emulator } from './testing/harness.ts'

const E = '\x1b'
const enc = new TextEncoder()

function lines(n: number, from = 0, style = (i: number) => (i % 5 === 0 ? `${E}[3${i % 8}m` : i % 7 === 0 ? `${E}[0m` : '')) {
  let s = ''
  for (let i = from; i < from + n; i++) s += `${style(i)}line ${i} ${'abc漢字'.repeat(i % 4)} end\r\n`
  return s
}

type Step = string | { resize: [number, number] }

/** Splits the steps into records of pseudo-random sizes, then into windows of pseudo-random counts. */
function recordsOf(steps: Step[], seed: number): FeedRecord[][] {
  let x = seed
  const rand = (n: number) => ((x = (x * 1103515245 + 12345) % 2147483648), x % n)
  const records: FeedRecord[] = []
  let sequence = 0
  for (const step of steps) {
    if (typeof step !== 'string') {
      records.push({ kind: 'resize', sequence: ++sequence, cols: step.resize[0], rows: step.resize[1] })
      continue
    }
    const bytes = enc.encode(step)
    for (let at = 0; at < bytes.length; ) {
      const n = 1 + rand(48 * 1024)
      records.push({ kind: 'data', sequence: ++sequence, bytes: bytes.subarray(at, at + n) })
      at += n
    }
  }
  const windows: FeedRecord[][] = []
  for (let at = 0; at < records.length; ) {
    const n = 1 + rand(40)
    windows.push(records.slice(at, at + n))
    at += n
  }
  return windows
}

async function compare(cols: number, rows: number, steps: Step[], seed = 7, historyCells = 20_000) {
  const direct = emulator(cols, rows, Math.floor(historyCells / cols))
  const fast = emulator(cols, rows, Math.floor(historyCells / cols))
  const planner = new FastForward({ cols, rows }, historyCells)
  for (const window of recordsOf(steps, seed)) {
    for (const record of window) {
      if (record.kind === 'data') await direct.write(record.bytes)
      else {
        direct.terminal.options.scrollback = Math.floor(historyCells / record.cols)
        direct.terminal.resize(record.cols, record.rows)
      }
    }
    for (const record of planner.plan(window)) {
      if (record.kind === 'data') await fast.write(record.bytes)
      else {
        fast.terminal.options.scrollback = Math.floor(historyCells / record.cols)
        fast.terminal.resize(record.cols, record.rows)
      }
    }
  }
  await direct.write(`${E}[7mprobe${E}[m`) // the current attributes must agree too
  await fast.write(`${E}[7mprobe${E}[m`)
  const t = direct.terminal
  expect(bufferDiff(t.buffer.normal, fast.terminal.buffer.normal, t.cols)).toEqual([])
  expect(bufferDiff(t.buffer.alternate, fast.terminal.buffer.alternate, t.cols)).toEqual([])
  expect(fast.tracker.cursor()).toEqual(direct.tracker.cursor())
  expect(fast.tracker.inputModes()).toEqual(direct.tracker.inputModes())
  expect(fast.tracker.title).toBe(direct.tracker.title)
  return planner.skipped
}

describe('FastForward', () => {
  it('skips a flood of coloured lines and leaves the same screen', async () => {
    const skipped = await compare(80, 24, [lines(3000)])
    expect(skipped).toBeGreaterThan(50_000)
  })

  it('keeps attributes set inside the skipped part (SGR only, cumulative)', async () => {
    const skipped = await compare(60, 10, [`${E}[1m`, lines(1500, 0, (i) => (i === 5 ? `${E}[4;38;2;1;2;3m` : i === 9 ? `${E}[22m` : '')), 'tail'])
    expect(skipped).toBeGreaterThan(0)
  })

  it('does not skip across titles, modes, alternate screen, scroll regions or cursor moves', async () => {
    const steps: Step[] = [
      lines(400),
      `${E}]2;title one${E}\\`,
      lines(400, 400),
      `${E}[?1049h${lines(600, 800)}${E}[?1049l`,
      `${E}[5;20r`,
      lines(900, 1400),
      `${E}[r`,
      lines(900, 2300),
      `${E}[H${E}[2Joverwrite${E}[10;10H`,
      lines(50, 3200),
      `${E}[?2004h${E}[?25l`,
      `progress 1\rprogress 22\rprogress 333\n\n`,
      lines(700, 3300),
    ]
    for (const seed of [1, 2, 3]) expect(await compare(50, 12, steps, seed)).toBeGreaterThan(0)
  })

  it('stays exact with bare LFs, tabs, wide characters at the edge and long wrapping lines', async () => {
    let s = ''
    for (let i = 0; i < 2000; i++) s += i % 3 === 0 ? `bare ${i}\n` : i % 3 === 1 ? `\ttab\t${i}\r\n` : `${'中'.repeat(i % 40)}${'w'.repeat(i % 90)}\r\n`
    expect(await compare(41, 9, [s, 'end without newline'])).toBeGreaterThan(0)
  })

  it('stays exact across resizes inside the flood', async () => {
    expect(await compare(80, 20, [lines(1200), { resize: [50, 20] }, lines(1200, 1200), { resize: [100, 30] }, lines(900, 2400)])).toBeGreaterThan(0)
  })

  it('treats C1 controls and string sequences conservatively', async () => {
    const c1 = '\u009b31m' // 8-bit CSI in UTF-8
    const skipped = await compare(60, 10, [lines(800), `${c1}red${E}[0m\r\n`, `${E}P+q544e${E}\\`, lines(900, 800), `\u009d2;c1 title\u009c`, lines(900, 1700)])
    expect(skipped).toBeGreaterThan(0)
  })
})
