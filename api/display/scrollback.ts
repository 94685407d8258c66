/**
 * Any range of the persisted scrollback as plain text (schema/wire/scrollback.ts), from libSQL:
 * works after the terminal ended and without the sidecar. An incremental revision (format 2)
 * reads only the history chunks the range touches; an older one is decoded whole.
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { TermkeepError } from '../../schema/errors.ts'
import type { RowsEvent } from '../../schema/wire/display.ts'
import { Scrollback, ScrollbackQuery } from '../../schema/wire/scrollback.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import type { Database } from '../../storage/client.ts'
import { guard } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json } from '../openapi.ts'
import { validate } from '../validate.ts'
import { type DecodedRow, decodeDisplay, decodeRow } from '../../common/display/decode.ts'
import { beginOf, chunksOf, historyRows, latestRevision } from '../../storage/displays/revisions.ts'

type Line = Scrollback['lines'][number]

/** Pure: a decoded row as its text, trailing blanks trimmed. */
export function rowText(row: DecodedRow | undefined): string {
  if (!row) return ''
  return row.cells
    .map((cell) => (cell.width === 0 ? '' : cell.chars === '' ? ' ' : cell.chars))
    .join('')
    .trimEnd()
}

export async function readScrollback(db: Database, sid: string, tid: string, query: ScrollbackQuery): Promise<Scrollback> {
  const header = await latestRevision(db, sid, tid)
  if (!header) throw new TermkeepError('display/not-found', `terminal ${tid} has no settled display yet`)
  const total = header.historyRows + header.viewportRows
  const from = Math.min(query.from ?? Math.max(0, total - query.count), total)
  const to = Math.min(total, from + query.count)
  // The head events (viewport, alternate), and with the older format every event.
  const parts: RowsEvent[] = []
  for await (const body of chunksOf(db, header)) {
    const event = JSON.parse(body) as RowsEvent
    if (header.format === 2 && event.region === 'history') break
    parts.push(event)
  }
  const decoded = decodeDisplay(beginOf(header), parts, { revision: header.revision, truncated: header.truncated })
  const history = new Map<number, DecodedRow>()
  if (header.format === 2 && from < header.historyRows) {
    const base = header.historyEnd! - header.historyRows
    let at = Math.min(to, header.historyRows) - 1
    for await (const { row } of historyRows(db, header, base + from, base + Math.min(to, header.historyRows)))
      history.set(at--, decodeRow(row))
  } else {
    decoded.history.forEach((row, i) => history.set(i, row))
  }
  const lines: Line[] = []
  for (let row = from; row < to; row++) {
    const decodedRow = row < header.historyRows ? history.get(row) : decoded.viewport[row - header.historyRows]
    lines.push({ row, text: rowText(decodedRow), wrapped: decodedRow?.wrapped ?? false })
  }
  return {
    revision: header.revision,
    sequence: header.sequence,
    historyRows: header.historyRows,
    viewportRows: header.viewportRows,
    total,
    truncated: header.truncated,
    from,
    lines,
  }
}

export const scrollbackRoutes = new Hono<AppEnv>().get(
  '/v1/sessions/:sid/terminals/:tid/scrollback',
  describeRoute({
    tags: ['display'],
    summary: 'Any range of the persisted scrollback (the newest settled screen: its whole history, then its viewport) as text',
    description:
      'Row 0 is the oldest history row kept (at 80 columns, 10,000 of them); `from` and `count` (at most 2,000) select rows, and without `from` the last `count`. From the database: works after the terminal ended and with the sidecar down.',
    responses: { 200: json(Scrollback), 404: error('no such session, or no settled display yet (`display/not-found`)') },
  }),
  guard('terminals:display'),
  validate('param', TerminalParams),
  validate('query', ScrollbackQuery),
  async (c) => {
    const { sid, tid } = c.req.valid('param')
    return c.json(await readScrollback(c.var.deps.db, sid, tid, c.req.valid('query')))
  },
)
