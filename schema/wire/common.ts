/** Wire pieces shared by several contracts: ids, geometry, the error envelope. */
import * as v from 'valibot'
import { ERROR_STATUS } from '../errors.ts'
import {
  MAX_COLS,
  MAX_IDEMPOTENCY_KEY_CHARS,
  MAX_ROWS,
  MAX_UTF16_UNITS_PER_GRAPHEME,
  MAX_VISIBLE_CELLS,
  MIN_COLS,
  MIN_ROWS,
  SESSION_ID_PATTERN,
  TERMINAL_ID_PATTERN,
} from '../limits.ts'

export const SessionId = v.pipe(v.string(), v.regex(SESSION_ID_PATTERN, 'session ids are 1–128 of [A-Za-z0-9_-]'))
export const TerminalId = v.pipe(v.string(), v.regex(TERMINAL_ID_PATTERN, 'terminal ids are 1–128 of [A-Za-z0-9_-]'))
export const AttachmentId = v.pipe(v.string(), v.regex(TERMINAL_ID_PATTERN, 'attachment ids are 1–128 of [A-Za-z0-9_-]'))

/**
 * Terminal geometry: 2–1,024 columns, 1–1,024 rows, at most 65,536 cells. Out-of-range values are
 * refused (`terminal/invalid-geometry`), never clamped.
 */
export const Cols = v.pipe(v.number(), v.integer(), v.minValue(MIN_COLS), v.maxValue(MAX_COLS))
export const Rows = v.pipe(v.number(), v.integer(), v.minValue(MIN_ROWS), v.maxValue(MAX_ROWS))
const cellsWithinLimit = (g: { cols: number; rows: number }) => g.cols * g.rows <= MAX_VISIBLE_CELLS
export const CELLS_MESSAGE = `at most ${MAX_VISIBLE_CELLS} visible cells (cols × rows)`
export const Geometry = v.pipe(v.object({ cols: Cols, rows: Rows }), v.check(cellsWithinLimit, CELLS_MESSAGE))
export type Geometry = v.InferOutput<typeof Geometry>

/**
 * Optional on the routes whose 503 leaves the outcome unknown and whose effect is not otherwise
 * repeatable (input, starting a workflow run): a key naming one request, so that a retry is
 * carried out at most once. A repeat of a key answers what the first attempt did; the same key
 * with another request is 422 (`terminal/idempotency-key-reused`,
 * `workflow/idempotency-key-reused`). docs/retrying.md.
 */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key'
export const IdempotencyKey = v.pipe(
  v.string(),
  v.regex(
    new RegExp(`^[\\x21-\\x7e]{1,${MAX_IDEMPOTENCY_KEY_CHARS}}$`),
    `idempotency keys are 1–${MAX_IDEMPOTENCY_KEY_CHARS} visible ASCII characters (no spaces)`,
  ),
)

/** Any JSON value (what a JSON body carries where the contract takes anything: a workflow's
 * `input`). Recursive, so its JSON Schema is a named definition (`$defs/JsonValue`). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }
export const JsonValue: v.GenericSchema<JsonValue> = v.union([
  v.string(),
  v.number(),
  v.boolean(),
  v.null(),
  v.array(v.lazy(() => JsonValue)),
  v.record(
    v.string(),
    v.lazy(() => JsonValue),
  ),
])

export const ErrorEnvelope = v.object({
  error: v.looseObject({
    code: v.picklist(Object.keys(ERROR_STATUS) as (keyof typeof ERROR_STATUS)[]),
    message: v.string(),
  }),
})

/** C0 controls, DEL and C1 controls: titles are printed as text by CLIs and pages. */
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/g
/** Anything but whitespace and invisible format characters (zero-width space, BOM, …). */
const VISIBLE_CHAR = /[^\s\p{Z}\p{Cf}]/u

/** Half of a surrogate pair on its own (JSON's `"\ud800"`): not text, and stored as U+FFFD. */
const LONE_SURROGATE = /\p{Cs}/u

const segmenter = new Intl.Segmenter()

/**
 * Pure: whether `text` has at most `max` graphemes, at a cost bounded by `max` rather than the
 * length. Intl.Segmenter costs time proportional to the length for every segment it steps over,
 * so a long text is refused by its length first (MAX_UTF16_UNITS_PER_GRAPHEME per grapheme) and
 * the count stops at the first grapheme past `max`. Written here because valibot's
 * `maxGraphemes` counts every segment of any length (seconds for 100,000 characters).
 */
export function withinGraphemes(text: string, max: number): boolean {
  if (text.length > max * MAX_UTF16_UNITS_PER_GRAPHEME) return false
  let count = 0
  for (const _ of segmenter.segment(text)) if (++count > max) return false
  return true
}

/** A JSON integer from `min` to `max`, its messages naming the field (`name`). */
export function boundedInteger(name: string, min: number, max: number) {
  return v.pipe(
    v.number(),
    v.safeInteger(`${name} is an integer`),
    v.minValue(min, `${name} is at least ${min}`),
    v.maxValue(max, `${name} is at most ${max}`),
  )
}

/** A `?limit=` query parameter: a page size from 1 to `max`. */
export function pageLimit(max: number) {
  return v.pipe(
    v.string(),
    v.regex(/^\d{1,4}$/, 'limit is a positive integer'),
    v.transform(Number),
    v.minValue(1),
    v.maxValue(max, `limit is at most ${max}`),
  )
}

/**
 * A user-given title or name: NFC (so two spellings of "á" are one title), trimmed, with at least
 * one visible character and no control characters or lone surrogates, at most `max` characters as
 * a reader counts them (graphemes: an emoji is one, not two UTF-16 units). `noun` is plural
 * ("titles", "token names"). The length is bounded first, before any step that reads the whole
 * text: the body limits let a name be tens of megabytes long.
 */
export function titleSchema(max: number, noun: string) {
  const tooLong = `${noun} are at most ${max} characters`
  return v.pipe(
    v.string(),
    v.check((title) => title.length <= max * MAX_UTF16_UNITS_PER_GRAPHEME, tooLong),
    v.check((title) => !LONE_SURROGATE.test(title), `${noun} must be valid Unicode (a lone surrogate is not)`),
    v.normalize('NFC'),
    v.trim(),
    v.check((title) => !title.match(CONTROL_CHARS), `${noun} cannot contain control characters`),
    v.check((title) => VISIBLE_CHAR.test(title), `${noun} need at least one visible character`),
    v.check((title) => withinGraphemes(title, max), tooLong),
  )
}

/** Pure: a title made from a name the user did not type (a directory's name): control characters
 * become U+FFFD, NFC, trimmed, cut to `max`; `fallback` when nothing visible is left. */
export function titleFrom(name: string, max: number, fallback: string): string {
  // Cut by code points (never half a surrogate pair); a code point is at most one grapheme.
  const title = Array.from(name.replace(CONTROL_CHARS, '\ufffd').normalize('NFC').trim()).slice(0, max).join('').trim()
  return VISIBLE_CHAR.test(title) ? title : fallback
}

/** Pure: text with control characters shown as \xNN, for printing to a terminal. */
export function printable(text: string): string {
  return text.replace(CONTROL_CHARS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
}
