/**
 * Any range of the persisted scrollback as plain text (schema/wire/scrollback.ts), from libSQL:
 * works after the terminal ended and without the sidecar. An incremental revision (format 2)
 * reads only the history chunks the range touches; an older one is decoded whole.
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { TermkeepError } from '../../schema/errors.ts'
import { type EncodedRow, ROW_WRAPPED, type RowsEvent } from '../../schema/wire/display.ts'
import { Scrollback, ScrollbackQuery } from '../../schema/wire/scrollback.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import type { Database } from '../../storage/client.ts'
import { guard } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json } from '../openapi.ts'
import { validate } from '../validate.ts'
import { chunksOf, historyRows, latestRevision } from '../../storage/displays/revisions.ts'

type Line = Scrollback['lines'][number]
type Row = { text: string; wrapped: boolean }

/**
 * Pure: an encoded row (schema/wire/display.ts: `[flags, style, content, …]`) as its text, trailing
 * blanks trimmed: a string is its characters, a number that many blank cells, an array one cell
 * each (a wide character's second cell is ''). Written here rather than decoding cells and styles
 * (common/display/decode.ts): text is all a scrollback read needs.
 */
export function rowOf(row: EncodedRow): Row {
  let text = ''
  for (let i = 2; i < row.length; i += 2) {
    const content = row[i]!
    text += typeof content === 'number' ? ' '.repeat(content) : typeof content === 'string' ? content : content.join('')
  }
  return { text: text.trimEnd(), wrapped: ((row[0] as number) & ROW_WRAPPED) !== 0 }
}

/** The rows of a region from `rows` events in order; a `partial` event's last row goes on in the next. */
function regionRows(events: RowsEvent[], region: RowsEvent['region']): Row[] {
  const rows: Row[] = []
  let continues = false
  for (const event of events) {
    if (event.region !== region) continue
    event.rows.forEach((encoded, i) => {
      const row = rowOf(encoded)
      const at = event.index + i
      if (i === 0 && continues && rows[at]) rows[at] = { ...rows[at]!, text: (rows[at]!.text + row.text).trimEnd() }
      else rows[at] = row
    })
    if (event.rows.length > 0) continues = event.partial === true
  }
  return rows
}

export async function readScrollback(db: Database, sid: string, tid: string, query: ScrollbackQuery): Promise<Scrollback> {
  const header = await latestRevision(db, sid, tid)
  if (!header) throw new TermkeepError('display/not-found', `terminal ${tid} has no settled display yet`)
  const total = header.historyRows + header.viewportRows
  const from = Math.min(query.from ?? Math.max(0, total - query.count), total)
  const to = Math.min(total, from + query.count)
  // The head events (viewport, alternate), and with the older format every event.
  const events: RowsEvent[] = []
  for await (const body of chunksOf(db, header)) {
    const event = JSON.parse(body) as RowsEvent
    if (header.format === 2 && event.region === 'history') break
    events.push(event)
  }
  const viewport = regionRows(events, 'viewport')
  const history = new Map<number, Row>()
  if (header.format === 2 && from < header.historyRows) {
    const base = header.historyEnd! - header.historyRows
    let at = Math.min(to, header.historyRows) - 1
    for await (const { row } of historyRows(db, header, base + from, base + Math.min(to, header.historyRows))) history.set(at--, rowOf(row))
  } else {
    // The transfer sends history newest first: row 0 is its last.
    const newestFirst = regionRows(events, 'history')
    newestFirst.forEach((row, i) => history.set(newestFirst.length - 1 - i, row))
  }
  const lines: Line[] = []
  for (let row = from; row < to; row++) {
    const found = row < header.historyRows ? history.get(row) : viewport[row - header.historyRows]
    lines.push({ row, text: found?.text ?? '', wrapped: found?.wrapped ?? false })
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
