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
import { ChunkPacker, type PackState, type PackSummary, type PlannedRow } from '../../common/display/pack.ts'
import { MAX_DISPLAY_BYTES, MAX_DISPLAY_EVENT_BYTES } from '../../schema/limits.ts'
import { utf8Length } from '../../schema/utf8.ts'
import type { CellStyle, EncodedRow } from '../../schema/wire/display.ts'
import { RowEncoder, StyleTable } from './encode.ts'
import type { RevisionMeta } from '../../storage/displays/writes.ts'
import { normalBuffer } from '../emulator/history-store.ts'
import type { EmulatorState } from '../emulator/restore.ts'
import type { HistoryLocation, HistoryPosition } from './history.ts'
import type { RowFacts } from './row-facts.ts'
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

/**
 * The history part of a packing, kept between encodes of one screen: its sizes depend only on the
 * history rows (fixed within an epoch's [first, end)) and on the style table the viewport and
 * alternate rows left (the history's first uses continue it), so while both are the same, an encode
 * that carries no history rows reuses it instead of walking 10,000 rows again (a quiet screen typed
 * into: a keystroke's revision cost ~30–100 ms, most of it that walk).
 */
export interface HistoryPacking {
  token: string
  first: number
  end: number
  /** The head's style table (JSON) the history continued. */
  headStyles: string
  /** What the history added to the packing. */
  chunks: number
  bytes: number
  rows: number
  cutCells: number
  /** The whole style table after the history. */
  styles: CellStyle[]
}

export interface EncodeOptions {
  /** Byte budget for all chunks (MAX_DISPLAY_BYTES in production; small in tests). Events are
   * always MAX_DISPLAY_EVENT_BYTES at most: the API packs stored history at that limit. */
  budget?: number
  sequence?: number
  /** The history rows the database holds already: in epoch `token`, every row before `from`. */
  stored?: { token: string; from: number }
  /** The screen's last history packing, reused when it still applies and replaced when not. */
  reuse?: { last?: HistoryPacking }
  /** The screen's row facts (row-facts.ts): the history is counted from them, not encoded. */
  facts?: RowFacts
}

/** Rows in retention order, each encoded when it is reached (a truncated revision skips the rest). */
export function* regionRows(tracker: DisplayTracker, encoder: RowEncoder, history = true): Generator<PlannedRow> {
  const terminal = tracker.terminal
  const { cols, rows } = terminal
  // The whole history: rows packed by the emulator's history store come back one at a time.
  const normal = normalBuffer(terminal)
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
  if (history) yield* historyRows(tracker, encoder)
}

/** The history rows in retention order (newest first), each encoded when it is reached. */
function* historyRows(tracker: DisplayTracker, encoder: RowEncoder): Generator<PlannedRow> {
  const normal = normalBuffer(tracker.terminal)
  const cols = tracker.terminal.cols
  const table = encoder.styles
  for (let y = normal.baseY - 1; y >= 0; y--) {
    const before = table.size
    const row = encoder.encode(normal.getLine(y), cols)
    yield { region: 'history', row, styles: table.size === before ? [] : table.styles.slice(before) }
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
  const head: string[] = []
  const headPacker = new ChunkPacker(budget, MAX_DISPLAY_EVENT_BYTES, (body) => head.push(body))
  for (const planned of regionRows(tracker, encoder, false)) headPacker.add(planned)
  const headSummary = headPacker.finish()
  const headState = headPacker.state()
  const location = position?.locate() ?? {
    token: `once.${Date.now().toString(36)}.${Math.random().toString(36).slice(2)}`,
    first: 0,
    end: normalBuffer(terminal).baseY,
  }
  const stored = options.stored?.token === location.token ? options.stored.from : location.first
  const headStyles = options.reuse ? JSON.stringify(encoder.styles.styles) : ''
  const last = options.reuse?.last
  const reusable =
    last !== undefined &&
    last.token === location.token &&
    last.first === location.first &&
    last.end === location.end &&
    last.headStyles === headStyles &&
    stored >= location.end &&
    headState.encodedBytes + headState.slack + last.bytes <= budget
  let packed: { history: HistoryPacking; truncated: boolean; carried: EncodedRow[] }
  if (reusable) packed = { history: last, truncated: false, carried: [] }
  else {
    // History continues the same packing, counted but not built: the API builds its events.
    packed =
      countFromFacts(tracker, encoder, location, stored, headState, budget, options.facts) ??
      (options.facts
        ? countAndLearn(tracker, encoder, location, stored, headState, budget, options.facts)
        : countByEncoding(tracker, encoder, location, stored, headState, budget))
    Object.assign(packed.history, { headStyles })
    if (options.reuse) options.reuse.last = packed.truncated ? undefined : packed.history
  }
  const { history, truncated } = packed
  const first = location.end - history.rows
  const from = Math.max(stored, first)
  position?.handedOut(location)
  return {
    chunks: headState.chunks + history.chunks,
    viewportRows: headSummary.viewportRows,
    alternateRows: headSummary.alternateRows,
    historyRows: history.rows,
    truncated,
    encodedBytes: headState.encodedBytes + history.bytes,
    cutCells: headSummary.cutCells + history.cutCells,
    meta: metaOf(tracker, options.sequence ?? 0),
    head,
    styles: history.styles,
    history: { token: location.token, first, end: location.end, from, rows: packed.carried.slice(0, location.end - from).reverse() },
  }
}

type Counted = { history: HistoryPacking; truncated: boolean; carried: EncodedRow[] }

function historyPacking(location: HistoryLocation, state: PackState, summary: PackSummary, styles: CellStyle[]): HistoryPacking {
  return {
    token: location.token,
    first: location.first,
    end: location.end,
    headStyles: '',
    chunks: summary.chunks - state.chunks,
    bytes: summary.encodedBytes - state.encodedBytes,
    rows: summary.historyRows,
    cutCells: summary.cutCells,
    styles,
  }
}

/** Every history row encoded and packed, newest first; the rows the database lacks are carried. */
function countByEncoding(
  tracker: DisplayTracker,
  encoder: RowEncoder,
  location: HistoryLocation,
  stored: number,
  state: PackState,
  budget: number,
): Counted {
  const packer = new ChunkPacker(budget, MAX_DISPLAY_EVENT_BYTES, undefined, state)
  const carried: EncodedRow[] = []
  let row = location.end
  for (const planned of historyRows(tracker, encoder)) {
    if (!packer.add(planned)) break
    row--
    if (row >= stored) carried.push(planned.row)
  }
  const summary = packer.finish()
  return { history: historyPacking(location, state, summary, encoder.styles.styles), truncated: summary.truncated, carried }
}

/**
 * Every history row encoded and packed, as `countByEncoding`, each encoded once with the epoch's
 * style ids of the row facts and mapped into the revision's: the walk leaves the facts of the whole
 * history behind (row-facts.ts), so the next revision counts instead of walking.
 */
function countAndLearn(
  tracker: DisplayTracker,
  encoder: RowEncoder,
  location: HistoryLocation,
  stored: number,
  state: PackState,
  budget: number,
  facts: RowFacts,
): Counted {
  const terminal = tracker.terminal
  const normal = normalBuffer(terminal)
  const walk = facts.learn(location, normal)
  const table = encoder.styles
  const packer = new ChunkPacker(budget, MAX_DISPLAY_EVENT_BYTES, undefined, state)
  const ids: number[] = [0]
  const carried: EncodedRow[] = []
  let complete = true
  for (let y = normal.baseY - 1; y >= 0; y--) {
    const row = walk.encoder.encode(normal.getLine(y), terminal.cols)
    const runs: number[] = []
    let fresh: CellStyle[] | undefined
    let extra = 0
    for (let i = 1; i < row.length; i += 2) {
      const epochId = row[i] as number
      runs.push(epochId)
      let id = ids[epochId]
      if (id === undefined) {
        const before = table.size
        id = table.intern(facts.styles[epochId])
        ids[epochId] = id
        if (table.size > before) (fresh ??= []).push(table.styles[id])
      }
      row[i] = id
      extra += digits(id) - 1
    }
    const rowBytes = utf8Length(JSON.stringify(row)) + 1
    const styleJson = fresh ? fresh.map((style) => JSON.stringify(style)) : NO_STYLES
    const placed = packer.addSized('history', rowBytes, styleJson) ?? packer.add({ region: 'history', row, styles: fresh ?? [] })
    if (!placed) {
      complete = false
      break
    }
    walk.row(rowBytes - extra, runs)
    if (location.first + y >= stored) carried.push(row)
  }
  walk.finish(complete)
  const summary = packer.finish()
  return { history: historyPacking(location, state, summary, table.styles), truncated: summary.truncated, carried }
}

/**
 * The same packing from the row facts: each row's size in this revision is its zero-id size plus
 * its style ids' extra digits, its first uses of styles those of its runs in order. Only the rows
 * the database lacks are encoded. Undefined when most rows are to be carried, when the facts cannot
 * count this history, or when a row needs splitting (then nothing of this encoder was used: its
 * table is as the head left it).
 */
function countFromFacts(
  tracker: DisplayTracker,
  encoder: RowEncoder,
  location: HistoryLocation,
  stored: number,
  state: PackState,
  budget: number,
  facts: RowFacts | undefined,
): Counted | undefined {
  // When most rows are new (a flood replaced the history, a new epoch) they are encoded anyway to
  // be carried: one encode each is cheaper than facts and then an encode.
  const carry = location.end - Math.max(stored, location.first)
  if (!facts || carry * 2 > location.end - location.first) return undefined
  const terminal = tracker.terminal
  const normal = normalBuffer(terminal)
  if (!facts.sync(location, normal, terminal.cols)) return undefined
  // Counting interns styles in order; a row that needs splitting sends everything to the other path,
  // which must start from the head's table: count against a copy.
  const table = new StyleTable()
  for (const style of encoder.styles.styles.slice(1)) table.intern(style)
  const packer = new ChunkPacker(budget, MAX_DISPLAY_EVENT_BYTES, undefined, state)
  const ids: number[] = [0]
  const newRows: number[] = []
  let split = false
  facts.newestFirst(location.first, (row, base, styles, start, end) => {
    let bytes = base
    let fresh: string[] | undefined
    for (let k = start; k < end; k++) {
      const epochId = styles[k]
      if (epochId === 0) continue
      let id = ids[epochId]
      if (id === undefined) {
        const before = table.size
        id = table.intern(facts.styles[epochId])
        ids[epochId] = id
        if (table.size > before) (fresh ??= []).push(facts.keys[epochId])
      }
      bytes += digits(id) - 1
    }
    const placed = packer.addSized('history', bytes, fresh ?? NO_STYLES)
    if (placed === undefined) split = true
    if (!placed) return false
    if (row >= stored) newRows.push(row)
    return true
  })
  if (split) return undefined
  const summary = packer.finish()
  // The carried rows, encoded with the revision's ids: their styles are all in the table by now,
  // in the order the count met them, so the encoder (given that table) reproduces them.
  const carrier = new RowEncoder(terminal.buffer.normal.getNullCell(), table)
  const carried = newRows.map((row) => carrier.encode(normal.getLine(row - location.first), terminal.cols))
  return { history: historyPacking(location, state, summary, table.styles), truncated: summary.truncated, carried }
}

const NO_STYLES: string[] = []

function digits(n: number): number {
  return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10_000 ? 4 : n < 100_000 ? 5 : String(n).length
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
