/**
 * What the packing of a revision needs to know of each history row, kept per screen for its
 * current history epoch, so that an encode counts the history's events and bytes without encoding
 * 10,000 rows again (that walk made a revision cost ~50 ms on an idle machine, ~150–500 ms on a
 * busy one, for a single new line). A row's JSON in a revision is `[flags, id, content, id, …]`
 * with the revision's style ids; everything but the ids is fixed once the row is in history. So a
 * row's fact is the UTF-8 length of its JSON with every id written as 0, plus the epoch-wide style
 * of each run: a revision's size for it is that length plus each id's extra digits, and its first
 * uses of styles follow from the run styles in order (revision.ts).
 *
 * Facts are computed once per row when the row is first counted and dropped with the rows the
 * history trims; a new epoch starts them over. They take ~20 bytes a row.
 */
import type { IBuffer } from '@xterm/headless'
import { utf8Length } from '../../schema/utf8.ts'
import { MAX_DISPLAY_EVENT_BYTES } from '../../schema/limits.ts'
import type { CellStyle } from '../../schema/wire/display.ts'
import { RowEncoder, StyleTable } from './encode.ts'
import type { HistoryLocation } from './history.ts'

/** Rows per block of facts: a block goes once every row in it has left the history. */
const BLOCK_ROWS = 256
/** A row whose JSON is larger than this may need more than one event: such a history is counted
 * by encoding every row (the packer splits it), as before. */
const LARGE_ROW_BYTES = MAX_DISPLAY_EVENT_BYTES / 4
/** Epoch style ids are kept in 16 bits; a history with more distinct styles is counted the slow way. */
const MAX_STYLES = 0xffff

/** Run styles per block at most (a block ends early rather than overflow its 16-bit offsets). */
const BLOCK_STYLES = 0xffff

interface Block {
  first: number
  /** Per row: the JSON length with zero ids plus one (the packer's separator; ≤ LARGE_ROW_BYTES). */
  base: Uint16Array
  /** Per row: where its run styles start in `styles` (and one more: the end). */
  offsets: Uint16Array
  /** One byte a run while the epoch has fewer than 256 styles, then two. */
  styles: Uint8Array | Uint16Array
  rows: number
}

export class RowFacts {
  #token = ''
  #blocks: Block[] = []
  #end = 0
  #table = new StyleTable()
  #keys: string[] = ['{}']
  #encoder: RowEncoder | undefined
  /** A row that needs the whole path (too large, too many styles): facts are not usable this epoch. */
  #complex = false

  /** The epoch's styles by id, and their JSON. */
  get styles(): CellStyle[] {
    return this.#table.styles
  }

  get keys(): string[] {
    return this.#keys
  }

  /**
   * Brings the facts to the history at `location` (rows [first, end) of `buffer`'s history, row i
   * being `first + i`): drops rows before `first`, adds the facts of the rows after the last
   * known one. False when the facts cannot count this history (the caller encodes every row).
   */
  sync(location: HistoryLocation, buffer: IBuffer, cols: number): boolean {
    if (location.token !== this.#token || location.end < this.#end) this.#reset(location.token, location.first)
    while (this.#blocks.length > 0 && this.#blocks[0].first + this.#blocks[0].rows <= location.first) this.#blocks.shift()
    if (this.#blocks.length === 0) this.#end = Math.max(this.#end, location.first)
    if (this.#end < location.first) this.#reset(location.token, location.first)
    this.#encoder ??= new RowEncoder(buffer.getNullCell(), this.#table)
    for (let row = this.#end; row < location.end && !this.#complex; row++) this.#add(buffer, row - location.first, cols)
    return !this.#complex
  }

  /** Calls `each` for rows [from, end) newest first with the row's base size and run styles. */
  newestFirst(from: number, each: (row: number, base: number, styles: ArrayLike<number>, start: number, end: number) => boolean): void {
    for (let b = this.#blocks.length - 1; b >= 0; b--) {
      const block = this.#blocks[b]
      for (let i = block.rows - 1; i >= 0; i--) {
        const row = block.first + i
        if (row < from) return
        if (!each(row, block.base[i], block.styles, block.offsets[i], block.offsets[i + 1])) return
      }
    }
  }

  #reset(token: string, first: number): void {
    this.#token = token
    this.#blocks = []
    this.#end = first
    this.#table = new StyleTable()
    this.#keys = ['{}']
    this.#encoder = undefined
    this.#complex = false
  }

  #add(buffer: IBuffer, index: number, cols: number): void {
    const row = this.#encoder!.encode(buffer.getLine(index), cols)
    const ids: number[] = []
    for (let i = 1; i < row.length; i += 2) {
      ids.push(row[i] as number)
      row[i] = 0
    }
    this.#append(utf8Length(JSON.stringify(row)) + 1, ids)
  }

  /**
   * Learns the facts of a whole history from a walk that encodes every row anyway (revision.ts,
   * after a flood or in a new epoch): `encoder` encodes with this epoch's style ids, and `row` is
   * called newest first with each row's zero-id size and its run styles. `finish` keeps them, if the
   * walk reached the oldest row.
   */
  learn(
    location: HistoryLocation,
    buffer: IBuffer,
  ): { encoder: RowEncoder; row(base: number, ids: number[]): void; finish(complete: boolean): void } {
    this.#reset(location.token, location.first)
    const encoder = new RowEncoder(buffer.getNullCell(), this.#table)
    this.#encoder = encoder
    const bases: number[] = []
    const runs: number[][] = []
    return {
      encoder,
      row: (base, ids) => {
        bases.push(base)
        runs.push(ids)
      },
      finish: (complete) => {
        if (!complete || bases.length !== location.end - location.first) return this.#reset(location.token, location.first)
        for (let i = bases.length - 1; i >= 0 && !this.#complex; i--) this.#append(bases[i], runs[i])
      },
    }
  }

  #append(base: number, ids: number[]): void {
    if (base > LARGE_ROW_BYTES || this.#table.size > MAX_STYLES) {
      this.#complex = true
      return
    }
    while (this.#keys.length < this.#table.size) this.#keys.push(JSON.stringify(this.#table.styles[this.#keys.length]))
    let block = this.#blocks.at(-1)
    if (!block || block.rows === BLOCK_ROWS || block.offsets[block.rows] + ids.length > BLOCK_STYLES) {
      block = {
        first: this.#end,
        base: new Uint16Array(BLOCK_ROWS),
        offsets: new Uint16Array(BLOCK_ROWS + 1),
        styles: new Uint8Array(BLOCK_ROWS * 4),
        rows: 0,
      }
      this.#blocks.push(block)
    }
    const at = block.offsets[block.rows]
    const wide = block.styles instanceof Uint8Array && ids.some((id) => id > 0xff)
    if (at + ids.length > block.styles.length || wide) {
      const size = Math.max(block.styles.length * (at + ids.length > block.styles.length ? 2 : 1), at + ids.length)
      const grown = wide || block.styles instanceof Uint16Array ? new Uint16Array(size) : new Uint8Array(size)
      grown.set(block.styles)
      block.styles = grown
    }
    block.styles.set(ids, at)
    block.base[block.rows] = base
    block.offsets[block.rows + 1] = at + ids.length
    block.rows++
    this.#end++
  }
}
