/**
 * What acts on a whole session's terminals, and searching output: closing every terminal of a
 * session (tmux kill-session), and an RE2 search of one terminal's output or of every live one's
 * (schema/wire/search.ts). All of it is live work, delegated to the sidecar.
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import * as v from 'valibot'
import { SEARCH_MAX_SCAN_BYTES } from '../../schema/limits.ts'
import { SessionId } from '../../schema/wire/common.ts'
import { SearchQuery, SearchResult, SessionSearch } from '../../schema/wire/search.ts'
import { TerminalInfo, TerminalParams } from '../../schema/wire/terminals.ts'
import { guard } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json, SIDECAR_DOWN, sidecarDownUnknown } from '../openapi.ts'
import { validate } from '../validate.ts'

const SessionOnly = v.object({ sid: SessionId })
const NOT_FOUND = { 404: error('no such session or terminal (`session/not-found`, `terminal/not-found`)') }
const GONE = { 410: error('the terminal is retired or from an earlier sidecar (`terminal/unavailable`)') }
const SEARCH = `RE2 (linear in the text, whatever the pattern), matched against each line of the output as plain text; at most \`limit\` matches and ${SEARCH_MAX_SCAN_BYTES / 1024 / 1024} MiB read per terminal and request, \`next\` and \`complete\` say where it stopped. A bad pattern is 400 \`request/invalid\`.`

export const sessionTerminalRoutes = new Hono<AppEnv>()
  .delete(
    '/v1/sessions/:sid/terminals',
    describeRoute({
      tags: ['terminals'],
      summary: 'Close every live terminal of the session (its processes end); answers their final infos',
      responses: {
        200: json(v.object({ closed: v.array(TerminalInfo) })),
        ...NOT_FOUND,
        ...sidecarDownUnknown('Retry: closing a closed terminal succeeds, and the ones left are closed then.'),
      },
    }),
    guard('terminals:control'),
    validate('param', SessionOnly),
    async (c) => {
      const { sid } = c.req.valid('param')
      return c.json(await (await c.var.fleet.forSession(sid)).closeSession(sid))
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid/search',
    describeRoute({
      tags: ['terminals'],
      summary: "Search one terminal's output after `after`: matching lines and the sequences they ended in",
      description: SEARCH,
      responses: {
        200: json(SearchResult),
        400: error('a bad pattern or cursor (`request/invalid`)'),
        ...NOT_FOUND,
        ...GONE,
        ...SIDECAR_DOWN,
      },
    }),
    guard('terminals:output'),
    validate('param', TerminalParams),
    validate('query', SearchQuery),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return c.json(await (await c.var.fleet.forSession(sid)).search(sid, tid, c.req.valid('query')))
    },
  )
  .get(
    '/v1/sessions/:sid/search',
    describeRoute({
      tags: ['terminals'],
      summary: 'Search the output of every live terminal of the session',
      description: `${SEARCH} Each terminal is searched from its first byte (\`after\` is for one terminal's search).`,
      responses: { 200: json(SessionSearch), 400: error('a bad pattern (`request/invalid`)'), ...NOT_FOUND, ...SIDECAR_DOWN },
    }),
    guard('terminals:output'),
    validate('param', SessionOnly),
    validate('query', SearchQuery),
    async (c) => {
      const { sid } = c.req.valid('param')
      return c.json(await (await c.var.fleet.forSession(sid)).searchSession(sid, c.req.valid('query')))
    },
  )
