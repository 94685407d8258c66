/**
 * Test helpers for the display layer: real @xterm/headless terminals, the real encoder, the real
 * decoder and replay, and a cell-by-cell buffer comparison through the public buffer API.
 */
import xterm, { type IBuffer, type IBufferCell, type Terminal as TerminalType } from '@xterm/headless'
import { decodeDisplay, type DecodedDisplay } from '../../../common/display/decode.ts'
import { replayAnsi } from '../../../common/display/replay.ts'
import { MAX_DISPLAY_BYTES, MAX_DISPLAY_EVENT_BYTES } from '../../../schema/limits.ts'
import type { DisplayBegin, DisplayEnd, RowsEvent } from '../../../schema/wire/display.ts'
import { useUnicode11 } from '../../../common/xterm/widths.ts'
import { historyRowsFor } from '../../../sidecar/display/allowance.ts'
import { RowEncoder } from '../../../sidecar/display/encode.ts'
import { metaOf, regionRows } from '../../../sidecar/display/revision.ts'
import type { RevisionMeta } from '../../../storage/displays/writes.ts'
import { DisplayTracker } from '../../../sidecar/display/tracker.ts'
import { legacyPlanChunks, type ChunkPlan } from './legacy-plan.ts'

const { Terminal } = xterm

export interface Emulated {
  terminal: TerminalType
  tracker: DisplayTracker
  write(data: string | Uint8Array): Promise<void>
}

export function emulator(cols: number, rows: number, scrollback = historyRowsFor(cols)): Emulated {
  const terminal = new Terminal({ cols, rows, scrollback, allowProposedApi: true })
  useUnicode11(terminal)
  const tracker = new DisplayTracker(terminal)
  return { terminal, tracker, write: (data) => new Promise<void>((resolve) => terminal.write(data, resolve)) }
}

/** A whole revision as the encoder before incremental revisions made it: every event. */
export interface ReferenceRevision extends ChunkPlan {
  meta: RevisionMeta
}

export interface ReferenceOptions {
  budget?: number
  eventLimit?: number
  sequence?: number
}

/**
 * The reference encoder: the screen encoded and packed whole, as before issue 18 (the packer
 * frozen in legacy-plan.ts). What readDisplay streams from an incremental revision must equal it.
 */
export function referenceRevision(tracker: DisplayTracker, options: ReferenceOptions = {}): ReferenceRevision {
  const terminal = tracker.terminal
  const encoder = new RowEncoder(terminal.buffer.normal.getNullCell())
  const plan = legacyPlanChunks(
    regionRows(tracker, encoder),
    options.budget ?? MAX_DISPLAY_BYTES,
    options.eventLimit ?? MAX_DISPLAY_EVENT_BYTES,
  )
  return { ...plan, meta: metaOf(tracker, options.sequence ?? 0) }
}

/** The three parts of a readDisplay transfer, as the API would stream them. */
export interface Transfer {
  begin: DisplayBegin
  parts: RowsEvent[]
  end: DisplayEnd
}

export function transferOf(revision: ReferenceRevision, number = 1): Transfer {
  const { meta } = revision
  const begin: DisplayBegin = {
    revision: number,
    origin: 'live',
    sequence: meta.sequence,
    cols: meta.cols,
    rows: meta.rows,
    cursor: meta.cursor,
    title: meta.title,
    alternateScreen: meta.alternateScreen,
    palette: meta.palette,
    inputModes: meta.inputModes,
    viewportRows: revision.viewportRows,
    alternateRows: revision.alternateRows,
    historyRows: revision.historyRows,
    truncated: revision.truncated,
    chunks: revision.chunks.length,
    encodedBytes: revision.encodedBytes,
    createdAt: 0,
  }
  return { begin, parts: revision.chunks.map((c) => JSON.parse(c) as RowsEvent), end: { revision: number, truncated: revision.truncated } }
}

export function decode(revision: ReferenceRevision): DecodedDisplay {
  const t = transferOf(revision)
  return decodeDisplay(t.begin, t.parts, t.end)
}

/** Replays a decoded display into a fresh terminal of the same geometry. */
export async function replay(display: DecodedDisplay): Promise<Emulated> {
  const e = emulator(display.begin.cols, display.begin.rows, Math.max(display.history.length, 1))
  if (display.history.length === 0) e.terminal.options.scrollback = 0
  await e.write(replayAnsi(display))
  return e
}

export async function roundTrip(source: Emulated, options: ReferenceOptions = {}) {
  const encoded = referenceRevision(source.tracker, options)
  const decoded = decode(encoded)
  const copy = await replay(decoded)
  return { encoded, decoded, copy, reencoded: referenceRevision(copy.tracker, options) }
}

interface CellInternals {
  getUnderlineStyle?(): number
  hasExtendedAttrs?(): number
  extended?: { underlineColor: number }
}

function underlineColour(c: CellInternals): string {
  const ext = c.hasExtendedAttrs?.() ? c.extended : undefined
  if (!ext || ext.underlineColor === -1 || (ext.underlineColor & 0x3000000) === 0) return 'd'
  const rgb = (ext.underlineColor & 0x3000000) === 0x3000000
  return rgb ? `rgb${ext.underlineColor & 0xffffff}` : `p${ext.underlineColor & 0xff}`
}

function colourOf(mode: 'fg' | 'bg', c: IBufferCell): string {
  if (mode === 'fg') return c.isFgDefault() ? 'd' : c.isFgRGB() ? `rgb${c.getFgColor()}` : `p${c.getFgColor()}`
  return c.isBgDefault() ? 'd' : c.isBgRGB() ? `rgb${c.getBgColor()}` : `p${c.getBgColor()}`
}

function describeCell(c: IBufferCell): string {
  const i = c as IBufferCell & CellInternals
  return JSON.stringify([
    c.getChars(),
    c.getWidth(),
    colourOf('fg', c),
    colourOf('bg', c),
    c.isBold(),
    c.isDim(),
    c.isItalic(),
    c.isUnderline(),
    c.isBlink(),
    c.isInverse(),
    c.isInvisible(),
    c.isStrikethrough(),
    c.isOverline(),
    i.getUnderlineStyle?.() ?? 0,
    underlineColour(i),
  ])
}

/** Every difference between two buffers (cells, widths, attributes, colours, wrapped flags). */
export function bufferDiff(a: IBuffer, b: IBuffer, cols: number, limit = 12): string[] {
  const diffs: string[] = []
  if (a.length !== b.length) diffs.push(`length ${a.length} vs ${b.length}`)
  const ca = a.getNullCell()
  const cb = b.getNullCell()
  const n = Math.min(a.length, b.length)
  for (let y = 0; y < n && diffs.length < limit; y++) {
    const la = a.getLine(y)!
    const lb = b.getLine(y)!
    if (la.isWrapped !== lb.isWrapped) diffs.push(`line ${y}: wrapped ${la.isWrapped} vs ${lb.isWrapped}`)
    for (let x = 0; x < cols && diffs.length < limit; x++) {
      const da = la.getCell(x, ca) ? describeCell(ca) : 'none'
      const db = lb.getCell(x, cb) ? describeCell(cb) : 'none'
      if (da !== db) diffs.push(`line ${y} col ${x}: ${da} vs ${db}`)
    }
  }
  return diffs
}
