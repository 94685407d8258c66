/** Wire pieces shared by several contracts: ids, geometry, the error envelope. */
import * as v from 'valibot'
import { ERROR_STATUS } from '../errors.ts'
import {
  MAX_COLS,
  MAX_ROWS,
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

export const ErrorEnvelope = v.object({
  error: v.looseObject({
    code: v.picklist(Object.keys(ERROR_STATUS) as (keyof typeof ERROR_STATUS)[]),
    message: v.string(),
  }),
})
