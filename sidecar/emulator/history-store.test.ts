/**
 * A screen whose history is mostly packed (history-store.ts) against one whose xterm.js keeps the
 * whole allowance itself, fed the same bytes: every cell of both buffers (through the packed
 * rows), the cursor, the saved cursor, the scroll region, the display revision's rows, the follow
 * snapshot's text and the plain projection must be the same, through floods past the allowance,
 * saved cursors across scrolling, scroll regions, reverse index, ED 3, full resets, the alternate
 * screen, wide and combined characters, extended underlines, hyperlinks and resizes.
 */
import serializeModule from '@xterm/addon-serialize'
import xterm, { type Terminal as TerminalType } from '@xterm/headless'
import { describe, expect, it } from 'vitest'
import { plainProjection } from '../display/plain.ts'
import { RowEncoder } from '../display/encode.ts'
import { regionRows } from '../display/revision.ts'
import { bufferDiff, referenceRevision, transferOf } from '../../test/support/display/harness.ts'
import { DisplayTracker } from '../display/tracker.ts'
import { captureState } from './restore.ts'
import { HistoryStore, normalBuffer } from './history-store.ts'
import { replayRevision } from './rebuild.ts'
import { serializeScreen } from './snapshot.ts'
import { useUnicode11 } from '../../common/xterm/widths.ts'

const { Terminal } = xterm
const { SerializeAddon } = serializeModule
const E = '\x1b'

/** History rows per column count (a small allowance, so a test floods past it quickly). */
const CELLS = 24_000
const allowance = (cols: number) => Math.floor(CELLS / cols)

interface Side {
  terminal: TerminalType
  tracker: DisplayTracker
  serializer: InstanceType<typeof SerializeAddon>
  write(data: string): Promise<void>
  resize(cols: number, rows: number): void
}

function side(cols: number, rows: number, hot?: number): Side {
  const terminal = new Terminal({ cols, rows, scrollback: allowance(cols), allowProposedApi: true })
  const store = hot === undefined ? undefined : new HistoryStore(terminal, allowance(cols), hot)
  useUnicode11(terminal)
  const serializer = new SerializeAddon()
  terminal.loadAddon(serializer)
  return {
    terminal,
    tracker: new DisplayTracker(terminal),
    serializer,
    write: (data) => new Promise<void>((resolve) => terminal.write(data, resolve)),
    resize(c, r) {
      if (store) return store.resize(c, r, allowance(c))
      terminal.options.scrollback = allowance(c)
      terminal.resize(c, r)
    },
  }
}

function savedOffset(terminal: TerminalType): number {
  const normal = (terminal as unknown as { _core: { buffers: { normal: { savedY: number; ybase: number } } } })._core.buffers.normal
  return normal.savedY - normal.ybase
}

function expectSame(plain: Side, kept: Side): void {
  const cols = plain.terminal.cols
  expect(kept.terminal.cols).toBe(cols)
  expect(bufferDiff(plain.terminal.buffer.normal, normalBuffer(kept.terminal), cols)).toEqual([])
  expect(bufferDiff(plain.terminal.buffer.alternate, kept.terminal.buffer.alternate, cols)).toEqual([])
  expect(captureState(kept.terminal)).toEqual(captureState(plain.terminal))
  expect(savedOffset(kept.terminal)).toBe(savedOffset(plain.terminal))
  const rows = (s: Side) => [...regionRows(s.tracker, new RowEncoder(s.terminal.buffer.normal.getNullCell()))]
  expect(rows(kept)).toEqual(rows(plain))
  expect(serializeScreen(kept.serializer, kept.terminal)).toBe(plain.serializer.serialize())
  expect(plainProjection(kept.terminal, kept.tracker, 1)).toEqual(plainProjection(plain.terminal, plain.tracker, 1))
}

function lines(n: number, from = 0): string {
  let s = ''
  for (let i = from; i < from + n; i++) {
    const style = [`${E}[31m`, `${E}[1;4:3;58;5;200m`, `${E}[0m`, `${E}[38;2;9;8;7;48;5;17m`, ''][i % 5]
    const text =
      i % 11 === 0
        ? `wide 漢字🙂 e\u0301 ${i}`
        : i % 13 === 0
          ? `${E}]8;;https://example.com/${i}${E}\\link ${i}${E}]8;;${E}\\`
          : `line ${i}`
    s += `${style}${text}${'.'.repeat(i % 97)}${E}[0m\r\n`
  }
  return s
}

type Step = string | { resize: [number, number] }

async function run(cols: number, rows: number, steps: Step[], hot = 8): Promise<{ plain: Side; kept: Side }> {
  const plain = side(cols, rows)
  const kept = side(cols, rows, hot)
  for (const step of steps) {
    if (typeof step === 'string') {
      await plain.write(step)
      await kept.write(step)
    } else {
      plain.resize(...step.resize)
      kept.resize(...step.resize)
    }
    expectSame(plain, kept)
  }
  // The attributes and the saved cursor must agree too.
  for (const probe of [`${E}[7mprobe${E}[m`, `${E}8saved`, `${E}[?1048lsaved2`]) {
    await plain.write(probe)
    await kept.write(probe)
    expectSame(plain, kept)
  }
  return { plain, kept }
}

describe('HistoryStore', () => {
  it('keeps a flood past the allowance exactly, packing all but the hot rows', async () => {
    const { kept } = await run(80, 24, [lines(200), lines(400, 200), lines(250, 600)])
    const store = HistoryStore.of(kept.terminal)!
    expect(store.packed).toBe(allowance(80) - 8)
    expect(kept.terminal.buffer.normal.length).toBe(8 + 24)
  })

  it('keeps the saved cursor where the whole ring keeps it, across scrolling before and after the allowance fills', async () => {
    await run(60, 10, [
      lines(20),
      `${E}[5;7H${E}7`,
      lines(30, 20),
      `${E}8x${E}7`,
      lines(500, 50),
      `${E}8y${E}[?1048h`,
      lines(40, 550),
      `${E}[?1049h${lines(30, 600)}${E}[?1049l`,
      lines(10, 700),
    ])
  })

  it('matches scroll regions at the top (splice), reverse index, ED 3 and full resets', async () => {
    await run(70, 12, [
      lines(300),
      `${E}[1;6r${E}[6;1H`,
      lines(40, 300),
      `${E}[r${E}[H${E}M${E}M`,
      lines(100, 400),
      `${E}[3J`,
      lines(30, 500),
      lines(400, 530),
      `${E}c`,
      lines(500, 1000),
    ])
  })

  it('reflows exactly on resize: narrower, wider, taller (history pulled back), shorter', async () => {
    const wrapped = `${'long wrapped line '.repeat(30)}\r\n`
    await run(80, 24, [
      lines(200),
      wrapped.repeat(40),
      lines(200, 200),
      { resize: [50, 24] },
      lines(30, 400),
      { resize: [120, 40] },
      { resize: [120, 8] },
      wrapped.repeat(5),
      { resize: [33, 60] },
      lines(600, 500),
      { resize: [80, 24] },
    ])
  })

  it('rebuilds from a revision as xterm.js alone does, packing as it replays, a wrapped oldest row included', async () => {
    const cols = 40
    const source = side(cols, 5)
    // Lines of 2.5 rows past the allowance: the oldest history row continues one already trimmed.
    for (let i = 0; i < 700; i++) await source.write(`${E}[3${i % 7}mline ${i} ${'x'.repeat(92)}${E}[0m\r\n`)
    expect(source.terminal.buffer.normal.getLine(0)?.isWrapped).toBe(true)
    const transfer = transferOf(referenceRevision(source.tracker))
    const payload = { sequence: 1, begin: transfer.begin, parts: transfer.parts, state: captureState(source.terminal)! }
    const plain = side(cols, 5)
    const kept = side(cols, 5, 8)
    await replayRevision(plain.terminal, payload)
    await replayRevision(kept.terminal, payload)
    expect(HistoryStore.of(kept.terminal)!.packed).toBeGreaterThan(0)
    expectSame(plain, kept)
    expect(bufferDiff(source.terminal.buffer.normal, normalBuffer(kept.terminal), cols)).toEqual([])
  })

  it('holds a 10,000-row coloured history in a fraction of what xterm.js needs', async () => {
    const terminal = new Terminal({ cols: 80, rows: 24, scrollback: 10_000, allowProposedApi: true })
    const store = new HistoryStore(terminal, 10_000)
    let text = ''
    for (let i = 0; i < 15_000; i++)
      text += `${E}[90m08:00:${i % 60}${E}[0m ${E}[3${(i % 7) + 1}mINFO${E}[0m ${E}[36m[w-${i % 9}]${E}[0m request ${E}[1m#${i}${E}[0m served in ${i % 900}ms\r\n`
    await new Promise<void>((resolve) => terminal.write(text, resolve))
    expect(store.packed + terminal.buffer.normal.baseY).toBe(10_000)
    // xterm.js: three words per cell for 80 cells, ~1.7 KiB a row with its objects; packed and
    // deflated, ~17 B (tmux: ~430 B a row).
    expect(store.packedBytes / store.packed).toBeLessThan(40)
    expect(normalBuffer(terminal).getLine(0)?.translateToString(true)).toMatch(/request #4977 served/)
  })
})
