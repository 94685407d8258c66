/**
 * The sidecar's command routes (schema/wire/commands.ts): what needs the live terminal. The API
 * serves the command list and records from libSQL itself.
 *
 *   POST /v1/sessions/:sid/terminals/:tid/commands                 run one in the shell → CommandRun
 *   GET  /v1/sessions/:sid/terminals/:tid/commands/watch           SSE begin, start, end, closed
 *   GET  /v1/sessions/:sid/terminals/:tid/commands/:n/output       a running (or just ended) command's text
 *   GET  /v1/sessions/:sid/terminals/:tid/commands/:n/output.bin   its exact bytes, from the journal
 */
import { type Context, Hono } from 'hono'
import * as v from 'valibot'
import { TermkeepError } from '../../schema/errors.ts'
import { SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import { type CommandOutput, CommandParams, type CommandRecord, RunCommand } from '../../schema/wire/commands.ts'
import { AttachmentId } from '../../schema/wire/common.ts'
import { ATTACHMENT_HEADER, PRINCIPAL_HEADER, Principal, TerminalParams } from '../../schema/wire/terminals.ts'
import { pulledResponse } from '../http/pulled.ts'
import { type SseYield, sseResponse } from '../http/sse.ts'
import { jsonBody, parse } from '../http/validate.ts'
import type { Journal } from '../journal/journal.ts'
import type { TerminalHost } from '../terminals/host.ts'
import { runInTerminal } from './run.ts'
import type { CommandTracker } from './tracker.ts'

const LastEventId = v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'Last-Event-ID is an event number'), v.transform(Number))

function header<T>(c: Context, name: string, schema: v.GenericSchema<string, T>): T | undefined {
  const value = c.req.header(name)
  return value === undefined ? undefined : parse(schema, value, 'request/invalid')
}

function notFound(n: number): TermkeepError {
  return new TermkeepError('command/not-found', `no command ${n} in this terminal's live record`, { n })
}

/** A record as its `start` event tells it: before its end was known. */
function asStarted(record: CommandRecord): CommandRecord {
  return { ...record, state: 'running', end: null, endLength: null, exitCode: null, endedAt: null, outputBytes: null }
}

/** The commands' starts and ends after event `after` (start of n: 2n−1, its end: 2n), then live. */
export async function* watchCommands(tracker: CommandTracker, after: number, signal: AbortSignal): AsyncGenerator<SseYield> {
  yield { event: 'begin', data: { newest: tracker.newest } }
  let cursor = after
  for (;;) {
    const events = []
    for (const record of tracker.records()) {
      if (2 * record.n - 1 > cursor) events.push({ event: 'start', id: 2 * record.n - 1, data: asStarted(record) })
      if (record.state === 'ended' && 2 * record.n > cursor) events.push({ event: 'end', id: 2 * record.n, data: record })
    }
    if (events.length > 0) {
      yield events
      cursor = events.at(-1)!.id
      continue
    }
    if (tracker.finished) {
      yield { event: 'closed', data: { newest: tracker.newest } }
      return
    }
    const woke = await tracker.changes.wait(SSE_HEARTBEAT_MS, signal)
    if (woke === 'aborted') return
    if (woke === 'timeout') yield { comment: 'heartbeat' }
  }
}

/** A command's exact bytes: its Data records, the first without `startSkip` bytes, the last cut
 * at `endLength` (a running command's: up to what is journaled now). */
export async function* commandBytes(journal: Journal, record: CommandRecord): AsyncGenerator<Uint8Array> {
  const release = journal.attach()
  try {
    const last = record.end ?? journal.lastSequence
    let cursor = record.start
    while (cursor < last) {
      const records = await journal.readRecords(cursor)
      if (records.length === 0) return
      for (const item of records) {
        if (item.sequence > last) return
        cursor = item.sequence
        if (item.kind !== 'data') continue
        const from = item.sequence === record.start + 1 ? record.startSkip : 0
        const to = item.sequence === record.end ? (record.endLength ?? item.bytes.length) : item.bytes.length
        if (to > from) yield Uint8Array.prototype.slice.call(item.bytes, from, to)
      }
    }
  } finally {
    release()
  }
}

export function commandRoutes(host: TerminalHost): Hono {
  const app = new Hono()
  const base = '/v1/sessions/:sid/terminals/:tid/commands'
  const terminal = async (c: Context) => {
    const { sid, tid } = parse(TerminalParams, c.req.param(), 'request/invalid')
    return host.live(sid, tid)
  }

  app.post(base, async (c) => {
    const live = await terminal(c)
    const body = await jsonBody(c.req.raw)
    const request = parse(RunCommand, body, (keys) => (keys.includes('command') ? 'command/invalid' : 'request/invalid'))
    const from = { attachment: header(c, ATTACHMENT_HEADER, AttachmentId), principal: header(c, PRINCIPAL_HEADER, Principal) }
    return c.json(await runInTerminal(live, request, from, c.req.raw.signal))
  })

  app.get(`${base}/watch`, async (c) => {
    const live = await terminal(c)
    const tracker = live.commands
    if (!tracker) throw new TermkeepError('command/not-found', 'this terminal keeps no command records')
    const query = c.req.query('after')
    const resume = c.req.header('last-event-id') ?? query
    const after = resume === undefined ? 0 : parse(LastEventId, resume, 'request/invalid')
    return sseResponse((signal) => watchCommands(tracker, after, signal), c.req.raw.signal)
  })

  app.get(`${base}/:n/output`, async (c) => {
    const { n } = parse(CommandParams, c.req.param(), 'request/invalid')
    const tracker = (await terminal(c)).commands
    const record = tracker?.record(n)
    const text = tracker?.textOf(n)
    if (!record || !text) throw notFound(n)
    return c.json({ n, state: record.state, ...text } satisfies CommandOutput)
  })

  app.get(`${base}/:n/output.bin`, async (c) => {
    const { n } = parse(CommandParams, c.req.param(), 'request/invalid')
    const live = await terminal(c)
    const record = live.commands?.record(n)
    if (!record) throw notFound(n)
    const headers = { 'content-type': 'application/octet-stream' }
    return pulledResponse(
      () => commandBytes(live.journal, record),
      (bytes) => bytes,
      headers,
      c.req.raw.signal,
    )
  })

  return app
}
