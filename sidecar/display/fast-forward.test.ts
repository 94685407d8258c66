/**
 * Fast-forward equivalence: a stream fed to one terminal as is and to another through the planner
 * (split into arbitrary journal records, windows and resizes) leaves identical buffers, cursor,
 * attributes and modes — and the planner really skips when output floods past the allowance.
 */
import { describe, expect, it } from 'vitest'
import { FastForward, hasNonPrintable, type FeedRecord } from './fast-forward.ts'
import { bufferDiff, emulator } from '../../test/support/display/harness.ts'

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

/**
 * How the windows reach the planner: `window` — each one at the live edge (everything comes out);
 * `stream` — none at the edge but the last (the planner may hold bytes over), with a `release()`
 * (a request looking at the screen) after some windows, compared right there too.
 */
type Feeding = 'window' | 'stream'

async function compare(cols: number, rows: number, steps: Step[], seed = 7, historyCells = 20_000, feeding: Feeding = 'window') {
  const direct = emulator(cols, rows, Math.floor(historyCells / cols))
  const fast = emulator(cols, rows, Math.floor(historyCells / cols))
  const planner = new FastForward({ cols, rows }, historyCells)
  const apply = async (target: typeof direct, records: FeedRecord[]) => {
    for (const record of records) {
      if (record.kind === 'data') await target.write(record.bytes)
      else {
        target.terminal.options.scrollback = Math.floor(historyCells / record.cols)
        target.terminal.resize(record.cols, record.rows)
      }
    }
  }
  const windows = recordsOf(steps, seed)
  let releases = 0
  for (const [i, window] of windows.entries()) {
    await apply(direct, window)
    const last = i === windows.length - 1
    await apply(fast, planner.plan(window, feeding === 'window' || last))
    if (feeding === 'stream' && !last && (i * 7 + seed) % 11 === 0) {
      releases++
      await apply(fast, planner.release())
      expect(bufferDiff(direct.terminal.buffer.normal, fast.terminal.buffer.normal, cols)).toEqual([])
      expect(fast.tracker.cursor()).toEqual(direct.tracker.cursor())
    }
  }
  if (feeding === 'stream' && windows.length > 11) expect(releases).toBeGreaterThan(0)
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
    const skipped = await compare(60, 10, [
      `${E}[1m`,
      lines(1500, 0, (i) => (i === 5 ? `${E}[4;38;2;1;2;3m` : i === 9 ? `${E}[22m` : '')),
      'tail',
    ])
    expect(skipped).toBeGreaterThan(0)
  })

  it('replays only the SGRs after the last reset of a skipped range, and leaves the same screen', async () => {
    // Every kind of SGR xterm keeps state for, around resets of every spelling.
    const styles = [
      `${E}[4:3;58;5;200m`,
      `${E}[0m`,
      `${E}[38;2;1;2;3;48;5;9;1;3m`,
      `${E}[m`,
      `${E}[;7;53m`,
      `${E}[4:2m${E}[59m`,
      `${E}[0;4:3;58:2::9:8:7m`,
      `${E}[21m`,
      `${E}[00;2;9m`,
      `${E}[0:3m`,
      `${E}[22;24;27m`,
      // A lone ESC before a sequence: xterm.js starts the sequence again at the second one.
      `${E}${E}[35;1m`,
      `${E}${E}[0;46m`,
    ]
    for (const seed of [1, 2, 3]) {
      // Blocks of sequences, then blocks of plain lines: those print in the attributes the
      // previous block accumulated since its last reset, across the skip points inside them.
      const style = (i: number) => (i % 600 < 300 && i % 3 === 0 ? styles[((i / 3) * seed) % styles.length] : '')
      const skipped = await compare(80, 24, [lines(3000, 0, style)], seed)
      expect(skipped).toBeGreaterThan(50_000)
    }
  })

  it('makes a coloured flood cost what a plain one does: the replacement keeps a few sequences', () => {
    const cols = 80
    const rows = 24
    const historyCells = 20_000
    const coloured = (i: number) => `${E}[90m08:00:${i % 60}${E}[0m ${E}[3${(i % 7) + 1}mINFO${E}[0m ${E}[1m#${i}${E}[0m served\r\n`
    let text = ''
    for (let i = 0; i < 5000; i++) text += coloured(i)
    const planner = new FastForward({ cols, rows }, historyCells)
    const out = planner.plan([{ kind: 'data', sequence: 1, bytes: enc.encode(text) }])
    const written = out.reduce((n, r) => n + (r.kind === 'data' ? r.bytes.length : 0), 0)
    // What must be parsed is the tail the proof needs (K lines) plus a handful of SGRs, where
    // keeping every SGR of the skipped lines would add ~4,000 lines' worth of sequences.
    const k = Math.floor(historyCells / cols) + 2 * rows + 2
    let tail = 0
    for (let i = 5000 - k - 2; i < 5000; i++) tail += enc.encode(coloured(i)).length
    expect(planner.skipped).toBeGreaterThan(text.length / 2)
    expect(written).toBeLessThan(tail + 64)
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
    for (let i = 0; i < 2000; i++)
      s += i % 3 === 0 ? `bare ${i}\n` : i % 3 === 1 ? `\ttab\t${i}\r\n` : `${'中'.repeat(i % 40)}${'w'.repeat(i % 90)}\r\n`
    expect(await compare(41, 9, [s, 'end without newline'])).toBeGreaterThan(0)
  })

  it('stays exact with stray controls, DEL, C1 and other UTF-8 at every alignment inside plain text', async () => {
    // The word-at-a-time skip must stop at each of these wherever it sits in a 4-byte word.
    const strays = ['\x7f', '\x01', '\x0e\x0f', '\x1b[1m', '\u0080', '\u00b0', '\u00e9', '\u0085', '\x0b', '~', ' ']
    let s = ''
    for (let i = 0; i < 3000; i++) {
      const text = `row ${i} ${'x'.repeat(i % 37)}`
      const at = (i * 13) % (text.length + 1)
      s += `${text.slice(0, at)}${strays[i % strays.length]}${text.slice(at)}\r\n`
    }
    for (const seed of [1, 2]) expect(await compare(64, 10, [s, lines(900)], seed, 20_000, 'stream')).toBeGreaterThan(0)
  })

  it('tells printable ASCII words from any word with a byte outside 0x20–0x7e', () => {
    const word = (bytes: number[]) => (bytes[0]! | (bytes[1]! << 8) | (bytes[2]! << 16) | (bytes[3]! << 24)) >>> 0
    const outside = (b: number) => b < 0x20 || b > 0x7e
    for (let b = 0; b < 256; b++) {
      for (let at = 0; at < 4; at++) {
        for (const fill of [0x20, 0x41, 0x7e]) {
          const bytes = [fill, fill, fill, fill]
          bytes[at] = b
          expect(hasNonPrintable(word(bytes)), `byte ${b} at ${at} among ${fill}`).toBe(outside(b))
        }
      }
    }
    let x = 99
    for (let i = 0; i < 200_000; i++) {
      const bytes = [0, 1, 2, 3].map(() => ((x = (x * 1103515245 + 12345) % 2147483648), 0x18 + (x % 0x70)))
      expect(hasNonPrintable(word(bytes))).toBe(bytes.some(outside))
    }
  })

  it('stays exact across resizes inside the flood', async () => {
    expect(
      await compare(80, 20, [lines(1200), { resize: [50, 20] }, lines(1200, 1200), { resize: [100, 30] }, lines(900, 2400)]),
    ).toBeGreaterThan(0)
  })

  it('treats C1 controls and string sequences conservatively', async () => {
    const c1 = '\u009b31m' // 8-bit CSI in UTF-8
    const skipped = await compare(60, 10, [
      lines(800),
      `${c1}red${E}[0m\r\n`,
      `${E}P+q544e${E}\\`,
      lines(900, 800),
      `\u009d2;c1 title\u009c`,
      lines(900, 1700),
    ])
    expect(skipped).toBeGreaterThan(0)
  })

  describe('streaming: windows not at the live edge hold an open stretch for the next', () => {
    it('leaves the same screen whatever the windows, the holds and the releases', async () => {
      const steps: Step[] = [
        lines(2000),
        `${E}]2;title${E}\\`,
        lines(1500, 2000),
        { resize: [70, 15] },
        lines(1800, 3500),
        `${E}[?1049h${lines(300, 5300)}${E}[?1049l`,
        `progress 1\rprogress 22\r`,
        lines(2500, 5600),
        'tail without newline',
      ]
      for (const seed of [1, 2, 3, 4]) expect(await compare(50, 12, steps, seed, 20_000, 'stream')).toBeGreaterThan(0)
    })

    it('skips far more of a flood that arrives in small windows than window by window', async () => {
      // ~20 lines per record and a few records per window: no single window holds K lines.
      const flood = [lines(12_000)]
      const windowed = await compare(80, 24, flood, 5, 20_000, 'window')
      const streamed = await compare(80, 24, flood, 5, 20_000, 'stream')
      const total = new TextEncoder().encode(flood[0]).length
      expect(streamed).toBeGreaterThan(0.9 * total)
      expect(streamed).toBeGreaterThan(windowed)
    })

    it('writes a stretch out rather than hold more than the hold limit (very long lines)', async () => {
      const long = 'x'.repeat(400 * 1024)
      let s = ''
      for (let i = 0; i < 8; i++) s += `${long}\r\n`
      expect(await compare(80, 24, [s, lines(400)], 3, 20_000, 'stream')).toBeGreaterThanOrEqual(0)
    })
  })
})
