/**
 * Display routes. readDisplay streams the newest persisted revision from libSQL (no sidecar
 * needed): `begin`, the stored `rows` bodies in order, then exactly one `end`. The plain
 * projection (`screen`, `screen/watch`) is live state, delegated to the sidecar and relayed.
 */
import { Hono, type Context } from 'hono'
import { describeRoute } from 'hono-openapi'
import { TermkeepError } from '../../schema/errors.ts'
import { ScreenProjection } from '../../schema/wire/display.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import { guard, openStream } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json, SIDECAR_DOWN, sse } from '../openapi.ts'
import { relaySSE, sseResponse } from '../sse.ts'
import { validate } from '../validate.ts'
import { beginOf, chunksOf, latestRevision } from '../../storage/displays/revisions.ts'

const tags = ['display']
const path = (sid: string, tid: string) => `/v1/sessions/${encodeURIComponent(sid)}/terminals/${encodeURIComponent(tid)}`
const NO_DISPLAY = { 404: error('no such session, or no settled display yet (`session/not-found`, `display/not-found`)') }

function relayScreenWatch(c: Context<AppEnv>, sid: string, tid: string): Promise<Response> {
  return openStream(c, async (options) => {
    const upstream = new AbortController()
    const sidecar = await c.var.fleet.forSession(sid)
    const response = await sidecar.request(`${path(sid, tid)}/screen/watch`, {
      signal: upstream.signal,
      headers: { accept: 'text/event-stream' },
    })
    return relaySSE(response, () => upstream.abort(), options)
  })
}

export const displayRoutes = new Hono<AppEnv>()
  .get(
    '/v1/sessions/:sid/terminals/:tid/display',
    describeRoute({
      tags,
      summary: 'readDisplay: the newest settled screen (colours, cursor, modes, history) from the database',
      description: `Event \`begin\` is DisplayBegin; each \`rows\` is a RowsEvent (schema/wire/display.ts); \`end\` is \`{revision, truncated}\` and comes exactly once. Replace what you show only at \`end\`.`,
      responses: { 200: sse('one revision', ['begin', 'rows', 'end']), ...NO_DISPLAY },
    }),
    guard('terminals:display'),
    validate('param', TerminalParams),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const { db } = c.var.deps
      const header = await latestRevision(db, sid, tid)
      if (!header) throw new TermkeepError('display/not-found', `terminal ${tid} has no settled display yet`)
      return openStream(c, (options) =>
        sseResponse(async (sink) => {
          await sink.send({ event: 'begin', data: beginOf(header) })
          for await (const body of chunksOf(db, header)) {
            if (sink.signal.aborted) return
            await sink.send({ event: 'rows', data: body })
          }
          await sink.send({ event: 'end', data: { revision: header.revision, truncated: header.truncated } })
        }, options),
      )
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid/screen',
    describeRoute({
      tags,
      summary: 'The plain-text projection (viewport plus a bounded history tail, cursor) of a live terminal',
      responses: { 200: json(ScreenProjection), 404: error('no such session or terminal'), ...SIDECAR_DOWN },
    }),
    guard('terminals:screen'),
    validate('param', TerminalParams),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return c.json(await (await c.var.fleet.forSession(sid)).json<ScreenProjection>(`${path(sid, tid)}/screen`))
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid/screen/watch',
    describeRoute({
      tags,
      summary: 'SSE of the plain projection: one now, then each change (at most every SCREEN_WATCH_INTERVAL_MS)',
      responses: { 200: sse('projections', ['screen', 'closed']), 404: error('no such session or terminal'), ...SIDECAR_DOWN },
    }),
    guard('terminals:screen'),
    validate('param', TerminalParams),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return relayScreenWatch(c, sid, tid)
    },
  )
