/**
 * History rows packed for keeping, not for editing (history-store.ts holds them). xterm.js keeps a
 * row as a BufferLine: three 32-bit words per cell (content, foreground, background) in its own
 * Uint32Array, allocated outside the V8 heap, plus three objects — ~1.7 KiB for an 80-column row
 * whatever it shows, so a 10,000-row history cost ~17 MiB per terminal where tmux needs ~4. Packed
 * and deflated, a coloured log row takes ~17 bytes.
 *
 * A packed row keeps exactly the words, so a row loaded back is the same BufferLine: its cells up
 * to the last one that is not an erased default cell; text one byte per cell when every cell is a
 * one-column code point below 256, two below 65,536, else the content words whole; colours as runs
 * of (length, style) over a per-chunk table of (foreground, background) word pairs; the rare
 * combined characters and extended attributes (underline styles and colours, hyperlinks) by cell.
 * A coloured log row of 60 cells takes ~100 bytes before deflating.
 *
 * Rows are packed in chunks of HISTORY_CHUNK_ROWS, each one typed array of words, deflated once
 * full, so the history costs a few allocations per chunk, not three per row.
 */
import { deflateSync, inflateSync } from 'node:zlib'

/** The BufferLine fields this reads and writes (@xterm/headless 6.0.0; the store checks them). */
export interface LineInternals {
  isWrapped: boolean
  length: number
  _data: Uint32Array
  _combined: Record<number, string>
  _extendedAttrs: Record<number, unknown>
}

/** Rows per chunk: a dropped row frees its memory with its chunk, so few rows wait as garbage. */
export const HISTORY_CHUNK_ROWS = 256

/** Full chunks are kept deflated (~5× smaller: ~20 bytes a coloured log row); a read inflates the
 * chunk it needs, and the last two stay inflated, since readers walk the history in order. */
const INFLATED_CHUNKS = 2
const inflated: Array<{ chunk: RowChunk; words: Uint32Array }> = []

/** The content word of an erased default cell: no code point, one column wide. */
const BLANK = 1 << 22
const COMBINED = 0x200000
const HAS_EXTENDED = 0x10000000
const WIDTH_ONE = 1 << 22
/** Header word: cells | wrapped << 16 | text mode << 17 | has extras << 19. */
const WRAPPED = 1 << 16
const MODE_SHIFT = 17
const EXTRAS = 1 << 19
const CELLS_MASK = 0xffff
const BYTES = 0
const UTF16 = 1
const WORDS = 2
/** Run word: cells << 21 | style id (a row has at most 1,024 cells). */
const RUN_SHIFT = 21
const STYLE_MASK = (1 << RUN_SHIFT) - 1

interface Extras {
  combined?: Array<[number, string]>
  ext?: Array<[number, unknown]>
}

export class RowChunk {
  #words: Uint32Array | undefined = new Uint32Array(1024)
  /** The words, deflated, once the chunk is full. */
  #deflated: Uint8Array | undefined
  #used = 0
  /** Word offset of each row, and the end. */
  #offsets: number[] | Uint32Array = [0]
  /** (fg, bg) pairs by style id. */
  #styles: number[] = []
  #styleIds: Map<number, Map<number, number>> | undefined = new Map()
  #extras: Map<number, Extras> | undefined
  #sealed = false

  get rows(): number {
    return this.#offsets.length - 1
  }

  get full(): boolean {
    return this.rows >= HISTORY_CHUNK_ROWS
  }

  /** Bytes held (for tests and the memory breakdown). */
  get bytes(): number {
    const offsets = this.#offsets instanceof Uint32Array ? this.#offsets.byteLength : this.#offsets.length * 8
    return (this.#deflated?.byteLength ?? this.#words?.byteLength ?? 0) + offsets + this.#styles.length * 8
  }

  /** Appends a row's exact content. */
  push(line: LineInternals): void {
    if (this.#sealed) throw new Error('history chunk is sealed')
    const data = line._data
    let cells = Math.min(line.length, Math.floor(data.length / 3))
    while (cells > 0 && data[cells * 3 - 3] === BLANK && data[cells * 3 - 2] === 0 && data[cells * 3 - 1] === 0) cells--
    let mode = BYTES
    let extras = false
    for (let x = 0; x < cells; x++) {
      const content = data[x * 3]
      if ((content & ~0xff) !== WIDTH_ONE) mode = Math.max(mode, (content & ~0xffff) === WIDTH_ONE ? UTF16 : WORDS)
      if (content & COMBINED || data[x * 3 + 2] & HAS_EXTENDED) extras = true
    }
    const textWords = mode === BYTES ? (cells + 3) >> 2 : mode === UTF16 ? (cells + 1) >> 1 : cells
    // Header, text, run count, then at most one run per cell.
    this.#reserve(2 + textWords + cells)
    const words = this.#words!
    let at = this.#used
    words[at++] = cells | (line.isWrapped ? WRAPPED : 0) | (mode << MODE_SHIFT) | (extras ? EXTRAS : 0)
    if (mode === BYTES) {
      const bytes = new Uint8Array(words.buffer, at * 4, textWords * 4)
      for (let x = 0; x < cells; x++) bytes[x] = data[x * 3] & 0xff
    } else if (mode === UTF16) {
      const units = new Uint16Array(words.buffer, at * 4, textWords * 2)
      for (let x = 0; x < cells; x++) units[x] = data[x * 3] & 0xffff
    } else for (let x = 0; x < cells; x++) words[at + x] = data[x * 3]
    at += textWords
    const runsAt = at++
    let runs = 0
    for (let x = 0; x < cells; ) {
      const fg = data[x * 3 + 1]
      const bg = data[x * 3 + 2]
      let end = x + 1
      while (end < cells && data[end * 3 + 1] === fg && data[end * 3 + 2] === bg) end++
      words[at++] = ((end - x) << RUN_SHIFT) | this.#style(fg, bg)
      runs++
      x = end
    }
    words[runsAt] = runs
    this.#used = at
    ;(this.#offsets as number[]).push(at)
    if (extras) this.#keepExtras(this.rows - 1, line, cells)
  }

  /** Writes row `index` into `line` (a BufferLine of `cols` cells): the same words it was packed
   * from, erased default cells after its last one. */
  load(index: number, line: LineInternals, cols: number): void {
    if (line._data.length < cols * 3) line._data = new Uint32Array(cols * 3)
    const data = line._data
    const words = this.#wordsForReading()
    let at = this.#offsets[index]
    const header = words[at++]
    const cells = Math.min(header & CELLS_MASK, cols)
    const stored = header & CELLS_MASK
    const mode = (header >>> MODE_SHIFT) & 3
    const textWords = mode === BYTES ? (stored + 3) >> 2 : mode === UTF16 ? (stored + 1) >> 1 : stored
    if (mode === BYTES) {
      const bytes = new Uint8Array(words.buffer, words.byteOffset + at * 4, textWords * 4)
      for (let x = 0; x < cells; x++) data[x * 3] = WIDTH_ONE | bytes[x]
    } else if (mode === UTF16) {
      const units = new Uint16Array(words.buffer, words.byteOffset + at * 4, textWords * 2)
      for (let x = 0; x < cells; x++) data[x * 3] = WIDTH_ONE | units[x]
    } else for (let x = 0; x < cells; x++) data[x * 3] = words[at + x]
    at += textWords
    const runs = words[at++]
    let x = 0
    for (let r = 0; r < runs; r++) {
      const run = words[at++]
      const style = (run & STYLE_MASK) * 2
      const fg = this.#styles[style]
      const bg = this.#styles[style + 1]
      for (const end = Math.min(cells, x + (run >>> RUN_SHIFT)); x < end; x++) {
        data[x * 3 + 1] = fg
        data[x * 3 + 2] = bg
      }
    }
    for (let c = cells; c < cols; c++) {
      data[c * 3] = BLANK
      data[c * 3 + 1] = 0
      data[c * 3 + 2] = 0
    }
    line.length = cols
    line.isWrapped = (header & WRAPPED) !== 0
    line._combined = {}
    line._extendedAttrs = {}
    if (header & EXTRAS) {
      const extras = this.#extras?.get(index)
      for (const [cell, text] of extras?.combined ?? []) line._combined[cell] = text
      for (const [cell, ext] of extras?.ext ?? []) line._extendedAttrs[cell] = ext
    }
  }

  /** Deflates the words; nothing is appended after. */
  seal(): void {
    if (this.#sealed || !this.#words) return
    this.#sealed = true
    const words = this.#words.subarray(0, this.#used)
    this.#deflated = deflateSync(new Uint8Array(words.buffer, words.byteOffset, words.byteLength))
    this.#words = undefined
    this.#offsets = Uint32Array.from(this.#offsets)
    this.#styleIds = undefined
  }

  #wordsForReading(): Uint32Array {
    if (this.#words) return this.#words
    const hit = inflated.find((entry) => entry.chunk === this)
    if (hit) return hit.words
    let bytes: Uint8Array = inflateSync(this.#deflated!)
    if (bytes.byteOffset % 4 !== 0) bytes = bytes.slice() // a pooled Buffer may be unaligned
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
    inflated.unshift({ chunk: this, words })
    inflated.length = Math.min(inflated.length, INFLATED_CHUNKS)
    return words
  }

  #style(fg: number, bg: number): number {
    const ids = this.#styleIds!
    let byBg = ids.get(fg)
    if (!byBg) ids.set(fg, (byBg = new Map()))
    let id = byBg.get(bg)
    if (id === undefined) {
      id = this.#styles.length / 2
      if (id > STYLE_MASK) throw new Error('history chunk style table is full')
      this.#styles.push(fg, bg)
      byBg.set(bg, id)
    }
    return id
  }

  #keepExtras(row: number, line: LineInternals, cells: number): void {
    const extras: Extras = {}
    for (let x = 0; x < cells; x++) {
      if (line._data[x * 3] & COMBINED) (extras.combined ??= []).push([x, line._combined[x]])
      if (line._data[x * 3 + 2] & HAS_EXTENDED) (extras.ext ??= []).push([x, line._extendedAttrs[x]])
    }
    ;(this.#extras ??= new Map()).set(row, extras)
  }

  #reserve(words: number): void {
    if (this.#used + words <= this.#words!.length) return
    const current = this.#words!
    const grown = new Uint32Array(Math.max(current.length * 2, this.#used + words))
    grown.set(current.subarray(0, this.#used))
    this.#words = grown
  }
}
