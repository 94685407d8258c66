/**
 * The display contract: one settled, durable screen ("revision") streamed by readDisplay.
 *
 *   GET /v1/sessions/:sid/terminals/:tid/display        SSE, finite (API, served from libSQL)
 *     begin  DisplayBegin   geometry, cursor, palette, input modes, title, region row counts
 *     rows   RowsEvent      ordered; each body ≤ MAX_DISPLAY_EVENT_BYTES
 *     end    DisplayEnd     exactly once; the transfer is complete only now
 *   A terminal without any revision answers 404 `display/not-found` before the stream starts.
 *
 *   GET /v1/sessions/:sid/terminals/:tid/screen         → ScreenProjection (sidecar, live)
 *   GET /v1/sessions/:sid/terminals/:tid/screen/watch   SSE `screen` ScreenProjection, rate-limited
 *
 * ## Rows
 * Regions arrive in retention order: `viewport` (the normal buffer's visible rows, top to bottom),
 * `alternate` (the alternate screen: the live one when `alternateScreen` is true, else the last one
 * captured before an application left it; may be empty), then `history` (the normal buffer's
 * scrollback, NEWEST FIRST: history index 0 is the row directly above the viewport). History that
 * did not fit the byte budget is omitted and `end.truncated` is true.
 *
 * A row is an array: `[flags, style, content, style, content, ...]`.
 *   flags    bit 0 (ROW_WRAPPED): this row continues the row above it (soft wrap).
 *   style    an index into the style table (0 is the default style and is never sent).
 *   content  string   — one cell per code point, each one column wide;
 *            number   — that many blank (erased) cells, which still carry the style (styled blanks);
 *            string[] — one cell per element, for clusters (combining marks) and wide characters:
 *                       a wide character is followed by "" (its second, zero-width cell).
 * Cells after the last run are default blanks (trailing default blanks are trimmed).
 *
 * ## Styles
 * `RowsEvent.styles` defines new style-table entries starting at id `styleBase`; ids are assigned in
 * order of first use, so a client that applies rows events in order always knows every id it meets.
 *
 * ## Rows larger than one event
 * A row whose styles and cells do not fit one event (≈ 900+ columns of per-cell distinct styles)
 * is never stripped: its new styles come first in events with `rows: []`, and a row still too large
 * on its own is split over consecutive events of its region. Each event but the last of such a row
 * has `partial: true`: its last row is incomplete, and the next event's first row (same `index`
 * position, same flags) continues it — append its runs. Only one cell larger than an event (tens of
 * thousands of combining marks on one character) is cut to fit.
 */
import * as v from 'valibot'

/** A palette index 0–255, or a true colour `#rrggbb`. Absent means the default colour. */
export type Color = number | string

/** Attribute bits of CellStyle.a. */
export const ATTR = {
  bold: 1,
  dim: 2,
  italic: 4,
  underline: 8,
  blink: 16,
  inverse: 32,
  invisible: 64,
  strikethrough: 128,
  overline: 256,
} as const

/** Underline styles (SGR 4:n); only sent when not single. */
export const UNDERLINE_STYLES = ['none', 'single', 'double', 'curly', 'dotted', 'dashed'] as const

/** One style-table entry. Every field is optional; `{}` is the default style. */
export interface CellStyle {
  fg?: Color
  bg?: Color
  /** Underline colour (SGR 58). */
  ul?: Color
  /** ATTR bits. */
  a?: number
  /** Underline style index into UNDERLINE_STYLES (2–5; absent = single when underlined). */
  u?: number
}

export const ROW_WRAPPED = 1

export type RowContent = string | number | string[]
/** `[flags, style, content, style, content, ...]` — see the module comment. */
export type EncodedRow = Array<number | string | string[]>

export const REGIONS = ['viewport', 'alternate', 'history'] as const
export type Region = (typeof REGIONS)[number]

export interface RowsEvent {
  region: Region
  /** Region index of the first row (history counts upward from the row above the viewport). */
  index: number
  /** Id of the first entry in `styles`. */
  styleBase: number
  styles: CellStyle[]
  rows: EncodedRow[]
  /** The last row continues in the next event's first row (see "Rows larger than one event"). */
  partial?: true
}

const ColorSchema = v.union([
  v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(255)),
  v.pipe(v.string(), v.regex(/^#[0-9a-f]{6}$/)),
])
export const CellStyleSchema = v.object({
  fg: v.optional(ColorSchema),
  bg: v.optional(ColorSchema),
  ul: v.optional(ColorSchema),
  a: v.optional(v.number()),
  u: v.optional(v.number()),
})
export const RowsEventSchema = v.object({
  region: v.picklist(REGIONS),
  index: v.number(),
  styleBase: v.number(),
  styles: v.array(CellStyleSchema),
  rows: v.array(v.array(v.union([v.number(), v.string(), v.array(v.string())]))),
  partial: v.optional(v.literal(true)),
})

export const CURSOR_STYLES = ['block', 'underline', 'bar'] as const
export type CursorStyle = (typeof CURSOR_STYLES)[number]

export const Cursor = v.object({
  /** Row in the active buffer's viewport (0-based). */
  row: v.number(),
  /** Column (0-based); equals `cols` when a wrap is pending after the last column. */
  col: v.number(),
  visible: v.boolean(),
  style: v.picklist(CURSOR_STYLES),
  blink: v.boolean(),
})
export type Cursor = v.InferOutput<typeof Cursor>

/** Colours as `#rrggbb`. `defaults` is the emulator's own palette; `changes` what OSC 4/10/11/12 set. */
export const Palette = v.object({
  defaults: v.object({ foreground: v.string(), background: v.string(), cursor: v.string(), ansi: v.array(v.string()) }),
  changes: v.object({
    foreground: v.optional(v.string()),
    background: v.optional(v.string()),
    cursor: v.optional(v.string()),
    /** Palette index (0–255, as a string key) → colour. */
    indexed: v.record(v.string(), v.string()),
  }),
})
export type Palette = v.InferOutput<typeof Palette>

export const MOUSE_TRACKING = ['none', 'x10', 'vt200', 'drag', 'any'] as const
export const MOUSE_ENCODINGS = ['default', 'utf8', 'sgr', 'urxvt', 'sgr-pixels'] as const

export const InputModes = v.object({
  applicationCursorKeys: v.boolean(),
  applicationKeypad: v.boolean(),
  bracketedPaste: v.boolean(),
  mouseTracking: v.picklist(MOUSE_TRACKING),
  mouseEncoding: v.picklist(MOUSE_ENCODINGS),
  focusReporting: v.boolean(),
  origin: v.boolean(),
  wraparound: v.boolean(),
  reverseWraparound: v.boolean(),
  insert: v.boolean(),
  alternateScreen: v.boolean(),
})
export type InputModes = v.InferOutput<typeof InputModes>

export const DisplayBegin = v.object({
  revision: v.number(),
  /** 'live' (settled emulator screen) or 'migrated' (legacy text-only record, default styles). */
  origin: v.picklist(['live', 'migrated']),
  /** Output sequence the emulator had applied (0 for migrated revisions). */
  sequence: v.number(),
  cols: v.number(),
  rows: v.number(),
  cursor: Cursor,
  title: v.string(),
  alternateScreen: v.boolean(),
  palette: Palette,
  inputModes: InputModes,
  viewportRows: v.number(),
  alternateRows: v.number(),
  historyRows: v.number(),
  truncated: v.boolean(),
  chunks: v.number(),
  encodedBytes: v.number(),
  createdAt: v.number(),
})
export type DisplayBegin = v.InferOutput<typeof DisplayBegin>

export const DisplayEnd = v.object({ revision: v.number(), truncated: v.boolean() })
export type DisplayEnd = v.InferOutput<typeof DisplayEnd>

/** The plain projection for agents: bounded text, independent of display retention. */
export const ScreenProjection = v.object({
  cols: v.number(),
  rows: v.number(),
  title: v.string(),
  alternateScreen: v.boolean(),
  /** As in the display: `col` equals `cols` when a wrap is pending after the last column. */
  cursor: v.object({ row: v.number(), col: v.number(), visible: v.boolean() }),
  /** History tail (oldest first, at most SCREEN_HISTORY_ROWS) then the viewport, right-trimmed. */
  lines: v.array(v.string()),
  /** Index in `lines` of the first viewport row. */
  viewportStart: v.number(),
  /** Output sequence the projection reflects. */
  sequence: v.number(),
})
export type ScreenProjection = v.InferOutput<typeof ScreenProjection>
