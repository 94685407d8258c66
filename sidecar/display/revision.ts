/**
 * Encodes the emulator's current screen as one revision: metadata plus `rows` event bodies in
 * retention order (viewport, alternate, history newest first), within the byte budget. History
 * rows are encoded lazily, so a truncated revision does not pay for rows it leaves out. Must run
 * where the headless Terminal lives (the emulator worker).
 */
import { MAX_DISPLAY_BYTES, MAX_DISPLAY_EVENT_BYTES } from '../../schema/limits.ts'
import type { Cursor, EncodedRow, InputModes, Palette } from '../../schema/wire/display.ts'
import { RowEncoder } from './encode.ts'
import { planChunks, type ChunkPlan, type PlannedRow } from './retention.ts'
import type { CapturedScreen, DisplayTracker } from './tracker.ts'

export interface RevisionMeta {
  cols: number
  rows: number
  cursor: Cursor
  title: string
  alternateScreen: boolean
  palette: Palette
  inputModes: InputModes
  /** Output sequence the emulator had applied. */
  sequence: number
}

export interface EncodedRevision extends ChunkPlan {
  meta: RevisionMeta
}

export interface EncodeOptions {
  /** Byte budget for all chunks (MAX_DISPLAY_BYTES in production; small in tests). */
  budget?: number
  eventLimit?: number
  sequence?: number
}

function* regionRows(tracker: DisplayTracker, encoder: RowEncoder): Generator<PlannedRow> {
  const terminal = tracker.terminal
  const { cols, rows } = terminal
  const normal = terminal.buffer.normal
  const table = encoder.styles
  const NONE: PlannedRow['styles'] = []
  const planned = (region: PlannedRow['region'], before: number, row: EncodedRow): PlannedRow => ({
    region,
    row,
    styles: table.size === before ? NONE : table.styles.slice(before),
  })
  let before = 0
  for (let y = 0; y < rows; y++) {
    before = table.size
    yield planned('viewport', before, encoder.encode(normal.getLine(normal.baseY + y), cols))
  }
  if (terminal.buffer.active.type === 'alternate') {
    const alt = terminal.buffer.alternate
    for (let y = 0; y < rows; y++) {
      before = table.size
      yield planned('alternate', before, encoder.encode(alt.getLine(alt.baseY + y), cols))
    }
  } else if (tracker.lastAlternate) {
    const captured = tracker.lastAlternate
    for (const row of captured.rows) {
      before = table.size
      yield planned('alternate', before, remap(row, captured, encoder))
    }
  }
  for (let y = normal.baseY - 1; y >= 0; y--) {
    before = table.size
    yield planned('history', before, encoder.encode(normal.getLine(y), cols))
  }
}

/** Rewrites a captured row's style ids into this revision's table. */
function remap(row: EncodedRow, captured: CapturedScreen, encoder: RowEncoder): EncodedRow {
  const out = row.slice()
  for (let i = 1; i < out.length; i += 2) {
    const id = out[i] as number
    out[i] = id === 0 ? 0 : encoder.styles.intern(captured.styles[id])
  }
  return out
}

export function encodeRevision(tracker: DisplayTracker, options: EncodeOptions = {}): EncodedRevision {
  const terminal = tracker.terminal
  const encoder = new RowEncoder(terminal.buffer.normal.getNullCell())
  const plan = planChunks(
    regionRows(tracker, encoder),
    options.budget ?? MAX_DISPLAY_BYTES,
    options.eventLimit ?? MAX_DISPLAY_EVENT_BYTES,
  )
  const inputModes = tracker.inputModes()
  return {
    ...plan,
    meta: {
      cols: terminal.cols,
      rows: terminal.rows,
      cursor: tracker.cursor(),
      title: tracker.title,
      alternateScreen: inputModes.alternateScreen,
      palette: tracker.paletteState(),
      inputModes,
      sequence: options.sequence ?? 0,
    },
  }
}

/** True when two revisions would display the same (the sequence alone does not count). */
export function sameDisplay(a: EncodedRevision, b: EncodedRevision): boolean {
  if (a.chunks.length !== b.chunks.length || a.truncated !== b.truncated) return false
  if (JSON.stringify({ ...a.meta, sequence: 0 }) !== JSON.stringify({ ...b.meta, sequence: 0 })) return false
  return a.chunks.every((chunk, i) => chunk === b.chunks[i])
}
