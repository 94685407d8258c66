/**
 * Reading any range of a terminal's persisted scrollback (docs/display.md): the newest settled
 * revision's history rows, oldest first, then its viewport, as plain text lines.
 *
 *   GET /v1/sessions/:sid/terminals/:tid/scrollback?from=&count=   → Scrollback
 *
 * Row 0 is the oldest history row the revision kept; `total` = historyRows + viewportRows. Without
 * `from`, the last `count` rows (the viewport and the history just above it).
 */
import * as v from 'valibot'
import { SCROLLBACK_PAGE_MAX_ROWS } from '../limits.ts'
import { pageLimit } from './common.ts'

export const ScrollbackQuery = v.object({
  from: v.optional(v.pipe(v.string(), v.regex(/^\d{1,9}$/, 'from is a row number'), v.transform(Number))),
  count: v.optional(pageLimit(SCROLLBACK_PAGE_MAX_ROWS), '200'),
})
export type ScrollbackQuery = v.InferOutput<typeof ScrollbackQuery>

export const Scrollback = v.object({
  revision: v.number(),
  /** The journal sequence the revision was settled at. */
  sequence: v.number(),
  historyRows: v.number(),
  viewportRows: v.number(),
  total: v.number(),
  /** The revision omitted history beyond its size budget (older rows are gone). */
  truncated: v.boolean(),
  from: v.number(),
  /** Each row's text (trailing blanks trimmed); `wrapped`: it continues the row before it. */
  lines: v.array(v.object({ row: v.number(), text: v.string(), wrapped: v.boolean() })),
})
export type Scrollback = v.InferOutput<typeof Scrollback>
