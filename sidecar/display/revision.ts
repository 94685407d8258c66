/**
 * Encodes the emulator's current screen as one revision. A revision streams as metadata plus
 * `rows` events in retention order (viewport, alternate, history newest first) within the byte
 * budget, but is stored in two parts (sidecar/display/persist.ts):
 *   - the *head*: the viewport and alternate events, verbatim, rewritten by every revision;
 *   - the *history*: rows located in their epoch (history.ts), of which a revision carries only
 *     those the database does not hold yet (`from` onward); the API re-packs the stored rows into
 *     the same events (storage/displays/revisions.ts).
 * The totals of the whole packing (events, bytes, history rows kept, truncated) are computed here,
 * where every row is at hand, so `begin` is exactly what the whole-revision encoder sent.
 * Must run where the headless Terminal lives (the emulator worker).
 */
import { ChunkPacker, type PackSummary, type PlannedRow } from '../../common/display/pack.ts'
import { MAX_DISPLAY_BYTES, MAX_DISPLAY_EVENT_BYTES } from '../../schema/limits.ts'
import type { CellStyle, EncodedRow } from '../../schema/wire/display.ts'
import { RowEncoder } from './encode.ts'
import type { RevisionMeta } from '../../storage/displays/writes.ts'
import type { EmulatorState } from '../emulator/restore.ts'
import type { HistoryLocation, HistoryPosition } from './history.ts'
import type { CapturedScreen, DisplayTracker } from './tracker.ts'

/** The history a revision shows, and the rows of it it carries. */
export interface HistoryPart extends HistoryLocation {
  /** The absolute row of `rows[0]` (first ≤ from ≤ end): rows before it are stored already. */
  from: number
  /** Rows [from, end), oldest first, in this revision's style ids. */
  rows: EncodedRow[]
}

export interface EncodedRevision extends PackSummary {
  meta: RevisionMeta
  /** The viewport and alternate `rows` events, verbatim. */
  head: string[]
  /** This revision's style table (id → style; 0 is `{}`), for the history rows it carries. */
  styles: CellStyle[]
  history: HistoryPart
  /** The emulator state a rebuild from this revision needs (sidecar/emulator/restore.ts); null
   * when it cannot be rebuilt from it; absent for one-off screens. */
  restore?: EmulatorState | null
}

export interface EncodeOptions {
  /** Byte budget for all chunks (MAX_DISPLAY_BYTES in production; small in tests). Events are
   * always MAX_DISPLAY_EVENT_BYTES at most: the API packs stored history at that limit. */
  budget?: number
  sequence?: number
  /** The history rows the database holds already: in epoch `token`, every row before `from`. */
  stored?: { token: string; from: number }
}

/** Rows in retention order, each encoded when it is reached (a truncated revision skips the rest). */
export function* regionRows(tracker: DisplayTracker, encoder: RowEncoder, history = true): Generator<PlannedRow> {
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
  if (!history) return
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

/** The revision's metadata: what `begin` carries besides the packing's totals. */
export function metaOf(tracker: DisplayTracker, sequence: number): RevisionMeta {
  const terminal = tracker.terminal
  const inputModes = tracker.inputModes()
  return {
    cols: terminal.cols,
    rows: terminal.rows,
    cursor: tracker.cursor(),
    title: tracker.title,
    alternateScreen: inputModes.alternateScreen,
    palette: tracker.paletteState(),
    inputModes,
    sequence,
  }
}

/**
 * Encodes the screen. `position` locates the history (an emulator's HistoryPosition); without it
 * the history is a fresh epoch of its own and the revision carries all of it (a one-off screen:
 * the legacy migration, tests).
 */
export function encodeRevision(tracker: DisplayTracker, position?: HistoryPosition, options: EncodeOptions = {}): EncodedRevision {
  const terminal = tracker.terminal
  const encoder = new RowEncoder(terminal.buffer.normal.getNullCell())
  const budget = options.budget ?? MAX_DISPLAY_BYTES
  const eventLimit = MAX_DISPLAY_EVENT_BYTES
  const head: string[] = []
  const headPacker = new ChunkPacker(budget, eventLimit, (body) => head.push(body))
  const rows = regionRows(tracker, encoder)
  let next = rows.next()
  for (; !next.done && next.value.region !== 'history'; next = rows.next()) headPacker.add(next.value)
  const headSummary = headPacker.finish()
  // History continues the same packing, counted but not built: the API builds its events.
  const historyPacker = new ChunkPacker(budget, eventLimit, undefined, headPacker.state())
  const location = position?.locate() ?? {
    token: `once.${Date.now().toString(36)}.${Math.random().toString(36).slice(2)}`,
    first: 0,
    end: terminal.buffer.normal.baseY,
  }
  const stored = options.stored?.token === location.token ? options.stored.from : location.first
  const carried: EncodedRow[] = []
  let row = location.end
  for (; !next.done; next = rows.next()) {
    if (!historyPacker.add(next.value)) break
    row--
    if (row >= stored) carried.push(next.value.row)
  }
  const summary = historyPacker.finish()
  const first = location.end - summary.historyRows
  const from = Math.max(stored, first)
  position?.handedOut(location)
  return {
    ...summary,
    viewportRows: headSummary.viewportRows,
    alternateRows: headSummary.alternateRows,
    cutCells: headSummary.cutCells + summary.cutCells,
    meta: metaOf(tracker, options.sequence ?? 0),
    head,
    styles: encoder.styles.styles,
    history: { token: location.token, first, end: location.end, from, rows: carried.slice(0, location.end - from).reverse() },
  }
}

/** True when two revisions would display the same (the sequence alone does not count). */
export function sameDisplay(a: EncodedRevision, b: EncodedRevision): boolean {
  if (a.chunks !== b.chunks || a.encodedBytes !== b.encodedBytes || a.truncated !== b.truncated) return false
  const h = a.history
  const k = b.history
  if (h.token !== k.token || h.first !== k.first || h.end !== k.end) return false
  if (JSON.stringify({ ...a.meta, sequence: 0 }) !== JSON.stringify({ ...b.meta, sequence: 0 })) return false
  // State no display shows still counts: a rebuild from the older revision would miss it.
  if (JSON.stringify(a.restore) !== JSON.stringify(b.restore)) return false
  return a.head.length === b.head.length && a.head.every((chunk, i) => chunk === b.head[i])
}
