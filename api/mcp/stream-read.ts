/**
 * A tool kind that reads one of the API's SSE routes to a bound, for agents that cannot hold a
 * stream open: from a cursor, the events already there and those that arrive, until the route
 * ends the stream (or sends one of its final events), no event came for `quietMs`, `maxEvents` or
 * `maxBytes` of data were read, or `timeoutMs` passed. Never an unbounded wait. It answers the
 * events and `next`, the id of the last one returned: sent back as the cursor, the next call reads
 * on with no event twice and none skipped (an event that did not fit is left to the next call;
 * the route replays it from the cursor).
 *
 * The route's guard and validation apply as over HTTP: the tool is a GET of the route, its path
 * parameters and query from the route's schemas, the cursor as the route takes it.
 */
import * as v from 'valibot'
import { StreamReadArgs } from '../../schema/wire/mcp.ts'
import type { ToolAnnotations } from './sdk.ts'
import { EventStream, type StreamEvent } from './events.ts'
import { toolInput } from './input.ts'
import { jsonResult, type Tool } from './tool.ts'

/** ended: the route ended the stream, or sent a final event; quiet: nothing came for quietMs;
 * limit: maxEvents or maxBytes reached; timeout: timeoutMs passed while events kept coming. */
export type ReadReason = 'ended' | 'quiet' | 'limit' | 'timeout'

export interface ReadOutcome {
  events: StreamEvent[]
  /** UTF-8 bytes of the events' data. */
  bytes: number
  /** The id of the last event read that carried one. */
  lastId: string | undefined
  reason: ReadReason
}

const encoder = new TextEncoder()

/** Reads `stream` until one of the bounds; `final` names the events after which nothing comes. */
export async function readToBound(
  stream: EventStream,
  bounds: StreamReadArgs,
  final: ReadonlySet<string> = new Set(),
): Promise<ReadOutcome> {
  const deadline = Date.now() + bounds.timeoutMs
  const events: StreamEvent[] = []
  let bytes = 0
  let lastId: string | undefined
  const done = (reason: ReadReason): ReadOutcome => ({ events, bytes, lastId, reason })
  for (let quietUntil = Date.now() + bounds.quietMs; ; quietUntil = Date.now() + bounds.quietMs) {
    const quiet = quietUntil < deadline
    const event = await stream.next(Math.min(quietUntil, deadline) - Date.now())
    if (event === 'ended') return done('ended')
    if (event === 'timeout') return done(quiet ? 'quiet' : 'timeout')
    const size = encoder.encode(event.data).length
    // Left unread for the next call (it comes again from the cursor); a first event comes alone.
    if (events.length > 0 && bytes + size > bounds.maxBytes) return done('limit')
    events.push(event)
    bytes += size
    if (event.id !== undefined) lastId = event.id
    if (final.has(event.event)) return done('ended')
    if (events.length >= bounds.maxEvents || bytes >= bounds.maxBytes) return done('limit')
  }
}

/** Pure: a cursor as the result gives it (a number when it is one). */
export function cursorValue(id: string | undefined): number | string | null {
  if (id === undefined) return null
  return /^\d{1,15}$/.test(id) ? Number(id) : id
}

/** An event as a result shows it: its data parsed when it is JSON. */
export function shownEvent(event: StreamEvent): Record<string, unknown> {
  let data: unknown = event.data
  try {
    data = JSON.parse(event.data)
  } catch {
    // not JSON: shown as the text it is
  }
  return { ...(event.id === undefined ? {} : { id: cursorValue(event.id) }), event: event.event, data }
}

export interface StreamReadSpec {
  name: string
  title: string
  description: string
  annotations?: ToolAnnotations
  /** The SSE route (GET), exactly as mounted. */
  path: string
  params?: v.GenericSchema
  query?: v.GenericSchema
  /** The field of the route's query that carries the cursor (`after`, validated by the route). */
  cursor: string
  /** Events after which the route sends nothing more. */
  final?: readonly string[]
  /** What the result shows of all the events read, instead of `{events}` (e.g. merged chunks). */
  summarize?: (events: StreamEvent[]) => Record<string, unknown>
  /** Arguments the tool takes in another shape than the route's query, and the query fields they
   * become: an observation handle is `{id}` in every observe_* tool, a string in the URL. */
  shaped?: { schema: v.ObjectSchema<v.ObjectEntries, undefined>; query(args: Record<string, unknown>): Record<string, string> }
}

export function streamReadTool(spec: StreamReadSpec): Tool {
  const final = new Set(spec.final ?? [])
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    annotations: spec.annotations ?? { readOnlyHint: true, openWorldHint: false },
    uses: [{ method: 'GET', path: spec.path }],
    input: toolInput({
      params: spec.params,
      query: spec.query,
      own: spec.shaped ? v.object({ ...StreamReadArgs.entries, ...spec.shaped.schema.entries }) : StreamReadArgs,
    }),
    async run({ params, query: given, own }, { call }) {
      const query = { ...given, ...spec.shaped?.query(own) }
      const from = query[spec.cursor]
      const stream = await EventStream.open(call, spec.path, { params, query })
      try {
        const outcome = await readToBound(stream, own as StreamReadArgs, final)
        const shown = spec.summarize ? spec.summarize(outcome.events) : { events: outcome.events.map(shownEvent) }
        return jsonResult({
          ...shown,
          next: cursorValue(outcome.lastId ?? from),
          reason: outcome.reason,
          bytes: outcome.bytes,
        })
      } finally {
        stream.close()
      }
    },
  }
}
