/**
 * The history of a screen's normal buffer, mostly packed (history-rows.ts). xterm.js keeps
 * HOT_HISTORY_ROWS rows above the viewport as it always does; each row that scrolls past them is
 * packed here the moment xterm.js would drop it, up to the allowance (floor(HISTORY_CELLS / cols)
 * rows in all). Everything that reads history — the display encoder, the follow snapshot, the
 * plain projection, an agent's text — reads `normalBuffer(terminal)`: the packed rows above
 * xterm.js's own, loaded back one at a time into a few reused lines, exactly as they were.
 *
 * Exactness. The rows are captured before xterm.js's history ring trims them (its push, recycle,
 * splice and shiftElements are wrapped on the ring itself), so every trim a full 10,000-row ring
 * would not have made is a capture, and every one it would have made drops the oldest packed row.
 * The one place where a smaller ring shows is the saved cursor: xterm.js stores DECSC's row as an
 * index into the ring (`savedY`) and moves it with neither kind of trim, so each change of the
 * packed count moves `savedY` the other way, keeping `savedY - ybase` what the full ring has. A
 * resize lets xterm.js reflow everything as before: the packed rows go back into the ring first
 * (`resize`), and out again after. ED 3 (`trimStart`) drops them with xterm.js's own history; a
 * full reset (new buffers) drops them too.
 *
 * This pins @xterm/headless 6.0.0's internals (the ring's methods, the buffer's ybase / savedY,
 * BufferLine's fields); the store checks them when it attaches, and history-store.test.ts
 * compares every cell, the cursor and the saved cursor with a terminal that keeps the whole
 * allowance itself.
 */
import type { IBuffer, IBufferLine, Terminal } from '@xterm/headless'
import { type LineInternals, RowChunk } from './history-rows.ts'

/** History rows xterm.js keeps itself above the viewport (the rest are packed): each one costs a
 * BufferLine (~1.7 KiB at 80 columns), and nothing needs them at hand: every reader goes through
 * `normalBuffer`, so this only spares loading for the rows just above the viewport. */
export const HOT_HISTORY_ROWS = 16

/** Packed rows loaded at once by readers (the serializer holds up to four lines at a time). */
const SCRATCH_LINES = 8

interface Ring {
  readonly length: number
  maxLength: number
  get(index: number): LineInternals
  push(value: LineInternals): void
  recycle(): LineInternals
  splice(start: number, deleteCount: number, ...items: LineInternals[]): void
  trimStart(count: number): void
  shiftElements(start: number, count: number, offset: number): void
  set(index: number, value: LineInternals): void
}

interface CoreBuffer {
  lines: Ring
  ybase: number
  ydisp: number
  savedY: number
}

interface Core {
  buffers: { normal: CoreBuffer; onBufferActivate(listener: () => void): { dispose(): void } }
}

type LineConstructor = new (cols: number, fill?: unknown, wrapped?: boolean) => LineInternals
type ViewConstructor = new (line: LineInternals) => IBufferLine

const stores = new WeakMap<Terminal, HistoryStore>()

function coreOf(terminal: Terminal): Core {
  const core = (terminal as unknown as { _core?: Core })._core
  const ring = core?.buffers?.normal?.lines
  const ok =
    ring &&
    typeof core.buffers.onBufferActivate === 'function' &&
    ['push', 'recycle', 'splice', 'trimStart', 'shiftElements', 'get', 'set'].every(
      (name) => typeof (ring as unknown as Record<string, unknown>)[name] === 'function',
    )
  if (!ok) throw new Error('@xterm/headless internals changed: the history store cannot attach')
  return core
}

export class HistoryStore {
  readonly #terminal: Terminal
  readonly #core: Core
  /** History rows in all (packed + xterm.js's own), and how many xterm.js keeps. */
  #allowance: number
  #hot: number
  readonly #hotLimit: number
  #chunks: RowChunk[] = []
  /** Rows at the start of the first chunk that were dropped. */
  #dead = 0
  #count = 0
  #ring: Ring | undefined
  /** While false, trims drop rows (a replay or a resize holds the whole history in the ring). */
  #capturing = true
  readonly #scratch: LineInternals[] = []
  readonly #views: IBufferLine[] = []
  #nextScratch = 0
  #Line: LineConstructor | undefined
  #View: ViewConstructor | undefined

  /** Attaches to a fresh terminal whose history allowance is `allowance` rows. */
  constructor(terminal: Terminal, allowance: number, hot = HOT_HISTORY_ROWS) {
    this.#terminal = terminal
    this.#core = coreOf(terminal)
    this.#allowance = allowance
    this.#hotLimit = hot
    this.#hot = Math.min(hot, allowance)
    terminal.options.scrollback = this.#hot
    this.#hook()
    // A full reset makes new buffers: their history starts empty, and its ring is hooked at once.
    this.#core.buffers.onBufferActivate(() => this.#hook())
    stores.set(terminal, this)
  }

  static of(terminal: Terminal): HistoryStore | undefined {
    return stores.get(terminal)
  }

  /** Packed rows (above the ring's own history). */
  get packed(): number {
    return this.#count
  }

  /** Bytes the packed rows hold (the memory breakdown). */
  get packedBytes(): number {
    return this.#chunks.reduce((n, chunk) => n + chunk.bytes, 0)
  }

  /** Packed row `index` (0: the oldest), loaded into a reused line: valid until SCRATCH_LINES more
   * loads. */
  packedLine(index: number): IBufferLine {
    const slot = this.#nextScratch++ % SCRATCH_LINES
    const cols = this.#terminal.cols
    const { Line, View } = this.#classes()
    let line = this.#scratch[slot]
    if (!line) {
      line = new Line(cols)
      this.#scratch[slot] = line
      this.#views[slot] = new View(line)
    }
    this.#load(this.#dead + index, line, cols)
    return this.#views[slot]
  }

  /**
   * Resizes the terminal as xterm.js alone would: the packed rows go back into its ring, the
   * allowance for the new width is set before the reflow, and what the ring holds beyond
   * HOT_HISTORY_ROWS is packed again after.
   */
  resize(cols: number, rows: number, allowance: number): void {
    const terminal = this.#terminal
    if (cols === terminal.cols && rows === terminal.rows && allowance === this.#allowance) return
    this.whole(() => {
      terminal.options.scrollback = allowance
      terminal.resize(cols, rows)
    }, allowance)
  }

  /**
   * Runs `change` with the whole history in xterm.js's ring (scrollback = the allowance, trims
   * drop rows), then packs what lies beyond HOT_HISTORY_ROWS of `allowance` again. Scroll regions
   * are reset (the scrollback option resizes the buffers): callers are resizes and replays, which
   * reset or restore them anyway.
   */
  whole<T>(change: () => T, allowance = this.#allowance): T {
    this.#expand()
    this.#capturing = false
    try {
      return change()
    } finally {
      this.#capturing = true
      this.#allowance = allowance
      this.#hot = Math.min(this.#hotLimit, allowance)
      this.#shrink()
    }
  }

  /**
   * Runs `replay` (a revision written into this fresh screen) with an allowance of `rows` history
   * rows, packing as it goes, then sets the allowance to `allowance`. Writing the history through
   * the hot rows, rather than into a ring raised to hold all of it, spares xterm.js ~10,000 line
   * allocations (a rebuild took ~2× as long the other way). False, with nothing run, when `rows` is
   * within the hot rows (then the caller replays with `wholeAsync`).
   */
  async replaying(rows: number, allowance: number, replay: () => Promise<void>): Promise<boolean> {
    if (rows <= this.#hot || this.#count > 0) return false
    this.#allowance = rows
    try {
      await replay()
    } finally {
      this.#allowance = allowance
    }
    return true
  }

  /** The async form of `whole`, for a replay that waits for xterm.js to parse. */
  async wholeAsync(change: () => Promise<void>, allowance = this.#allowance): Promise<void> {
    this.#expand()
    this.#capturing = false
    try {
      await change()
    } finally {
      this.#capturing = true
      this.#allowance = allowance
      this.#hot = Math.min(this.#hotLimit, allowance)
      this.#shrink()
    }
  }

  /** Wraps the trimming methods of the normal buffer's ring (once per ring). */
  #hook(): void {
    const ring = this.#core.buffers.normal.lines
    if (ring === this.#ring) return
    // New buffers (a full reset): the packed rows were the old history; savedY is the new buffer's.
    this.#drop(this.#count)
    this.#ring = ring
    const push = ring.push
    const recycle = ring.recycle
    const splice = ring.splice
    const shiftElements = ring.shiftElements
    const trimStart = ring.trimStart
    const live = () => this.#ring === ring && this.#capturing
    ring.push = (value) => {
      if (live() && ring.length === ring.maxLength) this.#capture([ring.get(0)])
      push.call(ring, value)
    }
    ring.recycle = () => {
      if (live()) this.#capture([ring.get(0)])
      return recycle.call(ring)
    }
    ring.splice = (start, deleteCount, ...items) => {
      const overflow = ring.length - deleteCount + items.length - ring.maxLength
      if (live() && overflow > 0) {
        const trimmed: LineInternals[] = []
        for (let i = 0; i < overflow; i++) {
          if (i < start) trimmed.push(ring.get(i))
          else if (i < start + items.length) trimmed.push(items[i - start])
          else trimmed.push(ring.get(i - items.length + deleteCount))
        }
        this.#capture(trimmed)
      }
      splice.call(ring, start, deleteCount, ...items)
    }
    ring.shiftElements = (start, count, offset) => {
      const overflow = offset > 0 ? ring.length + Math.max(0, start + count + offset - ring.length) - ring.maxLength : 0
      if (live() && overflow > 0) {
        const trimmed: LineInternals[] = []
        for (let i = 0; i < overflow; i++)
          trimmed.push(i >= start + offset && i < start + offset + count ? ring.get(i - offset) : ring.get(i))
        this.#capture(trimmed)
      }
      shiftElements.call(ring, start, count, offset)
    }
    // ED 3 and a shrinking allowance trim xterm.js's oldest rows: everything older goes too.
    ring.trimStart = (count) => {
      if (live() && count > 0) this.#clear()
      trimStart.call(ring, count)
    }
  }

  /** Rows the ring is about to trim, oldest first: packed, then the oldest beyond the allowance dropped. */
  #capture(lines: LineInternals[]): void {
    const capacity = this.#allowance - this.#hot
    if (capacity <= 0) return
    const before = this.#count
    for (const line of lines) {
      let chunk = this.#chunks.at(-1)
      if (!chunk || chunk.full) {
        chunk?.seal()
        chunk = new RowChunk()
        this.#chunks.push(chunk)
      }
      chunk.push(line)
      this.#count++
    }
    this.#drop(this.#count - capacity)
    this.#moveSaved(this.#count - before)
  }

  /** Drops the `n` oldest packed rows. */
  #drop(n: number): void {
    if (n <= 0) return
    this.#count -= n
    this.#dead += n
    while (this.#chunks.length > 0 && this.#dead >= this.#chunks[0].rows && (this.#chunks.length > 1 || this.#chunks[0].full)) {
      this.#dead -= this.#chunks[0].rows
      this.#chunks.shift()
    }
    if (this.#count === 0) {
      this.#chunks = []
      this.#dead = 0
    }
  }

  #clear(): void {
    const n = this.#count
    this.#drop(n)
    this.#moveSaved(-n)
  }

  /** `savedY` counts from the ring's first row: packing rows out of the ring moves it up. */
  #moveSaved(packed: number): void {
    if (packed !== 0) this.#core.buffers.normal.savedY -= packed
  }

  /** Puts every packed row back at the top of the ring (whose allowance is raised first). */
  #expand(): void {
    const buffer = this.#core.buffers.normal
    const n = this.#count
    if (n === 0) return
    const terminal = this.#terminal
    this.#capturing = false
    terminal.options.scrollback = this.#allowance
    const ring = buffer.lines
    const { Line } = this.#classes()
    const length = ring.length
    ;(ring as unknown as { length: number }).length = length + n
    for (let i = length - 1; i >= 0; i--) ring.set(i + n, ring.get(i))
    for (let i = 0; i < n; i++) {
      const line = new Line(terminal.cols)
      this.#load(this.#dead + i, line, terminal.cols)
      ring.set(i, line)
    }
    buffer.ybase += n
    buffer.ydisp += n
    this.#chunks = []
    this.#dead = 0
    this.#count = 0
    this.#moveSaved(-n)
    this.#capturing = true
  }

  /** Packs the ring's history beyond the hot rows, then lowers its allowance to them. */
  #shrink(): void {
    const buffer = this.#core.buffers.normal
    const terminal = this.#terminal
    const excess = buffer.ybase - this.#hot
    if (excess > 0) {
      const rows: LineInternals[] = []
      for (let i = 0; i < excess; i++) rows.push(buffer.lines.get(i))
      this.#capture(rows)
      this.#capturing = false
      buffer.lines.trimStart(excess)
      this.#capturing = true
      buffer.ybase -= excess
      buffer.ydisp = Math.max(0, buffer.ydisp - excess)
    }
    if (terminal.options.scrollback !== this.#hot) terminal.options.scrollback = this.#hot
  }

  #load(row: number, line: LineInternals, cols: number): void {
    let index = row
    for (const chunk of this.#chunks) {
      if (index < chunk.rows) return chunk.load(index, line, cols)
      index -= chunk.rows
    }
    throw new Error(`history store: no packed row ${row}`)
  }

  #classes(): { Line: LineConstructor; View: ViewConstructor } {
    if (!this.#Line || !this.#View) {
      const view = this.#terminal.buffer.normal.getLine(0) as unknown as { _line?: LineInternals; constructor: ViewConstructor }
      if (!view?._line?._data) throw new Error('@xterm/headless internals changed: no BufferLine behind a line view')
      this.#Line = view._line.constructor as unknown as LineConstructor
      this.#View = view.constructor
    }
    return { Line: this.#Line, View: this.#View }
  }
}

/**
 * A buffer as xterm.js would show it with the whole history in its ring: the packed rows first,
 * then the ring's own. Line views of packed rows are reused (valid until a few more loads).
 */
export function normalBuffer(terminal: Terminal): IBuffer {
  return withPacked(terminal.buffer.normal, HistoryStore.of(terminal))
}

/** The active buffer, its history included (the alternate buffer has none). */
export function activeBuffer(terminal: Terminal): IBuffer {
  const active = terminal.buffer.active
  return active.type === 'normal' ? withPacked(active, HistoryStore.of(terminal)) : active
}

function withPacked(buffer: IBuffer, store: HistoryStore | undefined): IBuffer {
  const packed = store?.packed ?? 0
  if (!store || packed === 0) return buffer
  return {
    type: buffer.type,
    get cursorX() {
      return buffer.cursorX
    },
    get cursorY() {
      return buffer.cursorY
    },
    get viewportY() {
      return buffer.viewportY + packed
    },
    get baseY() {
      return buffer.baseY + packed
    },
    get length() {
      return buffer.length + packed
    },
    getLine: (y: number) => (y < 0 ? undefined : y < packed ? store.packedLine(y) : buffer.getLine(y - packed)),
    getNullCell: () => buffer.getNullCell(),
  } as IBuffer
}
