/**
 * Search routes (schema/wire/search.ts): one terminal's journal, or every live terminal's of a
 * session, searched with one RE2 pattern.
 */
import { type Context, Hono } from 'hono'
import { SearchQuery } from '../../schema/wire/search.ts'
import { SessionId } from '../../schema/wire/common.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import { parse } from '../http/validate.ts'
import type { TerminalHost } from '../terminals/host.ts'
import { compileSearch, searchJournal } from './search.ts'

function query(c: Context) {
  const { pattern, after, limit } = parse(SearchQuery, c.req.query(), 'request/invalid')
  return { pattern: compileSearch(pattern), after: Number(after), limit }
}

export function searchRoutes(host: TerminalHost): Hono {
  const app = new Hono()
  app.get('/v1/sessions/:sid/terminals/:tid/search', async (c) => {
    const { sid, tid } = parse(TerminalParams, c.req.param(), 'request/invalid')
    const { pattern, after, limit } = query(c)
    const terminal = await host.live(sid, tid)
    return c.json(await searchJournal(terminal.journal, pattern, Math.min(after, terminal.journal.lastSequence), limit))
  })
  app.get('/v1/sessions/:sid/search', async (c) => {
    const sid = parse(SessionId, c.req.param('sid'), 'request/invalid')
    const { pattern, limit } = query(c)
    const results = []
    for (const info of await host.list(sid)) {
      if (info.state === 'retired' || info.state === 'closed') continue
      const terminal = await host.live(sid, info.id).catch(() => undefined)
      if (!terminal || terminal.journal.retired) continue
      results.push({ terminalId: info.id, ...(await searchJournal(terminal.journal, pattern, 0, limit)) })
    }
    return c.json({ terminals: results })
  })
  return app
}
