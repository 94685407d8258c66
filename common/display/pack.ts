/**
 * Retention and chunking of a display revision, as a streaming packer over encoded rows in
 * retention order: the viewport, the alternate viewport, then history newest first. Viewport and
 * alternate rows are always kept (the geometry limits bound them); history rows are kept while
 * the total encoding stays within the budget, and the first history row that does not fit ends the
 * revision as `truncated`. Rows are packed into `rows` event bodies of at most `eventLimit` bytes;
 * a region change starts a new body.
 *
 * Runtime-neutral (no Buffer): the sidecar packs a revision's viewport and alternate screen with
 * it when it encodes, and the API packs the stored history rows with the same code when it
 * streams a revision (storage/displays/revisions.ts), so both produce byte-identical events.
 *
 * A row that cannot share a fresh event with its styles (≈ 900+ columns of per-cell distinct
 * styles) is not cut: its styles go first in style-only events (`rows: []`), and a row still too
 * large on its own is split over several events, each but the last marked `partial` (the
 * contract: schema/wire/display.ts). Only a single cell larger than an event (tens of thousands of
 * combining marks on one character) is cut to fit, and counted in `cutCells`.
 */
import { utf8Length } from '../../schema/utf8.ts'
import type { CellStyle, EncodedRow, Region, RowContent } from '../../schema/wire/display.ts'

export interface PlannedRow {
  region: Region
  row: EncodedRow
  /** Style-table entries this row uses first (ids continue the table in order). */
  styles: CellStyle[]
}

/** What a packing produced, besides the bodies it emitted. */
export interface PackSummary {
  /** Number of `rows` events. */
  chunks: number
  viewportRows: number
  alternateRows: number
  historyRows: number
  truncated: boolean
  /** Sum of the bodies' UTF-8 byte lengths. */
  encodedBytes: number
  /** Cells cut because one cell alone exceeded an event (never happens at sane sizes). */
  cutCells: number
}

/** Where a packing stands: a packer can continue another's (the API continues the sidecar's
 * viewport and alternate events with the stored history). */
export interface PackState {
  encodedBytes: number
  /** Style ids in use so far, the default (0) included. */
  styleCount: number
  chunks: number
  /** How much the budget check counted the last event over its size while it was open (1 per
   * non-empty array): the first check of a continuing packer counts it too, as one packer would. */
  slack: number
}

const envelope = (r: Region, i: number, base: number) => `{"region":"${r}","index":${i},"styleBase":${base},"styles":[],"rows":[]}`
const PARTIAL = ',"partial":true'
const NO_STYLES: string[] = []

export class ChunkPacker {
  readonly #budget: number
  readonly #limit: number
  /** Receives each finished body; without it only sizes are counted (the sidecar's totals). */
  readonly #emit: ((body: string) => void) | undefined
  readonly #counts: Record<Region, number> = { viewport: 0, alternate: 0, history: 0 }
  #encodedBytes: number
  #styleCount: number
  #chunks: number
  #truncated = false
  #cutCells = 0
  #slack: number
  // The open chunk.
  #region: Region | undefined
  #index = 0
  #styleBase = 0
  #styleParts: string[] = []
  #rowParts: string[] = []
  /** Envelope plus each element and a comma: at most 2 more than the body (legacy accounting,
   * which the budget check keeps so truncation stays where it was). */
  #openBytes = 0

  constructor(budget: number, eventLimit: number, emit?: (body: string) => void, start?: PackState) {
    this.#budget = budget
    this.#limit = eventLimit
    this.#emit = emit
    this.#encodedBytes = start?.encodedBytes ?? 0
    this.#styleCount = start?.styleCount ?? 1 // id 0, the default style, is implicit
    this.#chunks = start?.chunks ?? 0
    this.#slack = start?.slack ?? 0
  }

  get truncated(): boolean {
    return this.#truncated
  }

  /** Adds one row; false (and nothing added) when a history row no longer fits the budget. */
  add(planned: PlannedRow): boolean {
    if (this.#truncated) return false
    const styleJson = planned.styles.length === 0 ? NO_STYLES : planned.styles.map((s) => JSON.stringify(s))
    const rowJson = JSON.stringify(planned.row)
    const rowBytes = utf8Length(rowJson) + 1
    return this.#place(planned.region, styleJson, rowJson, rowBytes) ?? this.#addSplit(planned, styleJson, rowBytes)
  }

  /**
   * `add` for a counting packer (no `emit`: the sidecar's history totals) given only the size of
   * the row's JSON (`rowBytes`: its UTF-8 length plus 1) and the JSON of the styles it uses first.
   * Undefined, with nothing added, when the row needs more than a fresh event: the caller adds it
   * whole with `add`, which splits it.
   */
  addSized(region: Region, rowBytes: number, styleJson: string[]): boolean | undefined {
    if (this.#emit) throw new Error('addSized counts only: a packer that emits bodies needs the rows')
    if (this.#truncated) return false
    return this.#place(region, styleJson, '', rowBytes)
  }

  #place(region: Region, styleJson: string[], rowJson: string, rowBytes: number): boolean | undefined {
    let styleBytes = 0
    for (const s of styleJson) styleBytes += utf8Length(s) + 1
    const sameChunk = this.#region === region && this.#openBytes + styleBytes + rowBytes <= this.#limit
    const freshBytes = sameChunk ? 0 : utf8Length(envelope(region, this.#counts[region], this.#styleCount)) + styleBytes
    if (!sameChunk && freshBytes + rowBytes > this.#limit) return undefined
    const added = sameChunk ? styleBytes + rowBytes : freshBytes + rowBytes
    if (region === 'history' && !this.#fits(added)) return false
    if (!sameChunk) this.#open(region, this.#counts[region])
    for (const s of styleJson) this.#styleParts.push(s)
    this.#rowParts.push(rowJson)
    this.#openBytes += styleBytes + rowBytes
    this.#styleCount += styleJson.length
    this.#counts[region]++
    return true
  }

  /** Closes the open event; the packing is complete. */
  finish(): PackSummary {
    this.#close()
    return {
      chunks: this.#chunks,
      viewportRows: this.#counts.viewport,
      alternateRows: this.#counts.alternate,
      historyRows: this.#counts.history,
      truncated: this.#truncated,
      encodedBytes: this.#encodedBytes,
      cutCells: this.#cutCells,
    }
  }

  /** The state after closing the open event (for a packer that continues this one). */
  state(): PackState {
    this.#close()
    return { encodedBytes: this.#encodedBytes, styleCount: this.#styleCount, chunks: this.#chunks, slack: this.#slack }
  }

  /** Whether `added` more bytes keep the revision within the budget; if not, it is truncated. */
  #fits(added: number): boolean {
    if (this.#encodedBytes + (this.#region ? this.#openBytes : this.#slack) + added <= this.#budget) return true
    this.#truncated = true
    return false
  }

  #open(region: Region, index: number): void {
    this.#close()
    this.#region = region
    this.#index = index
    this.#styleBase = this.#styleCount
    this.#styleParts = []
    this.#rowParts = []
    this.#openBytes = utf8Length(envelope(region, index, this.#styleBase))
    this.#slack = 0
  }

  #close(partial = false): void {
    if (this.#region === undefined) return
    const tail = partial ? PARTIAL : ''
    let bytes: number
    if (this.#emit) {
      const body = `{"region":"${this.#region}","index":${this.#index},"styleBase":${this.#styleBase},"styles":[${this.#styleParts.join(',')}],"rows":[${this.#rowParts.join(',')}]${tail}}`
      bytes = utf8Length(body)
      this.#emit(body)
    } else {
      // The same count without building the body: one comma fewer than elements per array.
      bytes = this.#openBytes - (this.#styleParts.length > 0 ? 1 : 0) - (this.#rowParts.length > 0 ? 1 : 0) + tail.length
    }
    this.#encodedBytes += bytes
    this.#slack = this.#openBytes + tail.length - bytes
    this.#chunks++
    this.#region = undefined
  }

  /**
   * A row too large for one fresh event together with its styles: the styles first, in
   * style-only events, then the row, split over `partial` events when it alone is too large.
   */
  #addSplit(planned: PlannedRow, styleJson: string[], rowBytes: number): boolean {
    const region = planned.region
    const index = this.#counts[region]
    const styleEvents = packStyles(styleJson, this.#limit - utf8Length(envelope(region, index, this.#styleCount + styleJson.length)))
    const baseAfter = this.#styleCount + styleJson.length
    const fresh = utf8Length(envelope(region, index, baseAfter))
    const pieces = rowBytes + fresh <= this.#limit ? [planned.row] : this.#splitRow(planned.row, this.#limit - fresh - PARTIAL.length - 1)
    // The bytes this row adds, counted as `add` counts them, against the budget.
    let added = 0
    let base = this.#styleCount
    for (const group of styleEvents) {
      added += utf8Length(envelope(region, index, base)) + group.reduce((n, s) => n + utf8Length(s) + 1, 0)
      base += group.length
    }
    for (const [i, piece] of pieces.entries())
      added += fresh + utf8Length(JSON.stringify(piece)) + 1 + (i < pieces.length - 1 ? PARTIAL.length : 0)
    if (region === 'history' && !this.#fits(added)) return false
    for (const group of styleEvents) {
      this.#open(region, index)
      for (const s of group) {
        this.#styleParts.push(s)
        this.#openBytes += utf8Length(s) + 1
      }
      this.#styleCount += group.length
    }
    for (const [i, piece] of pieces.entries()) {
      this.#open(region, index)
      const json = JSON.stringify(piece)
      this.#rowParts.push(json)
      this.#openBytes += utf8Length(json) + 1
      if (i < pieces.length - 1) this.#close(true)
    }
    this.#counts[region]++
    return true
  }

  /** Cuts a row into pieces whose JSON fits `room` bytes: at run boundaries, inside long runs at
   * cell boundaries; only a single cell larger than `room` is cut itself. */
  #splitRow(row: EncodedRow, room: number): EncodedRow[] {
    const flags = row[0] as number
    const pieces: EncodedRow[] = []
    let piece: EncodedRow = [flags]
    let bytes = utf8Length(JSON.stringify(piece))
    const push = (style: number, content: RowContent) => {
      const cost = utf8Length(JSON.stringify(style)) + 1 + utf8Length(JSON.stringify(content)) + 1
      if (bytes + cost > room && piece.length > 1) {
        pieces.push(piece)
        piece = [flags]
        bytes = utf8Length(JSON.stringify(piece))
      }
      piece.push(style, content)
      bytes += cost
    }
    for (let i = 1; i + 1 < row.length; i += 2) {
      const style = row[i] as number
      for (const part of this.#fit(row[i + 1] as RowContent, room - 16)) push(style, part)
    }
    if (piece.length > 1 || pieces.length === 0) pieces.push(piece)
    return pieces
  }

  /** One run's content as parts that each fit `room` bytes of JSON. */
  #fit(content: RowContent, room: number): RowContent[] {
    if (typeof content === 'number' || utf8Length(JSON.stringify(content)) <= room) return [content]
    const cells = typeof content === 'string' ? [...content] : content
    const parts: RowContent[] = []
    let part: string[] = []
    let bytes = 2
    for (let i = 0; i < cells.length; i++) {
      let cell = cells[i]
      // A wide character and its "" second cell stay together (a decoder widens the cell before "").
      const tail = cells[i + 1] === '' && cell !== '' ? 1 : 0
      let cost = utf8Length(JSON.stringify(cell)) + 1 + tail * 3
      if (cost > room - 2) {
        cell = cutCell(cell, room - 8)
        cost = utf8Length(JSON.stringify(cell)) + 1 + tail * 3
        this.#cutCells++
      }
      if (bytes + cost > room && part.length > 0) {
        parts.push(typeof content === 'string' ? part.join('') : part)
        part = []
        bytes = 2
      }
      part.push(cell)
      if (tail) part.push(cells[++i])
      bytes += cost
    }
    if (part.length > 0) parts.push(typeof content === 'string' ? part.join('') : part)
    return parts
  }
}

/** Styles grouped so each group's JSON fits `room` bytes. */
function packStyles(styles: string[], room: number): string[][] {
  const groups: string[][] = []
  let group: string[] = []
  let bytes = 0
  for (const s of styles) {
    const cost = utf8Length(s) + 1
    if (bytes + cost > room && group.length > 0) {
      groups.push(group)
      group = []
      bytes = 0
    }
    group.push(s)
    bytes += cost
  }
  if (group.length > 0) groups.push(group)
  return groups
}

/** One cell's characters cut (at code points) to fit `room` bytes of JSON. */
function cutCell(cell: string, room: number): string {
  const points = [...cell]
  let lo = 1
  let hi = points.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (utf8Length(JSON.stringify(points.slice(0, mid).join(''))) <= room) lo = mid
    else hi = mid - 1
  }
  return points.slice(0, lo).join('')
}

/** A whole revision at once: every body and the summary (the sidecar's reference encoder). */
export function planChunks(rows: Iterable<PlannedRow>, budget: number, eventLimit: number): PackSummary & { bodies: string[] } {
  const bodies: string[] = []
  const packer = new ChunkPacker(budget, eventLimit, (body) => bodies.push(body))
  for (const row of rows) if (!packer.add(row)) break
  return { ...packer.finish(), bodies }
}
