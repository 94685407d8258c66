/**
 * The live-terminal routes (schema/wire/terminals.ts) and the output journal routes
 * (schema/wire/output.ts), under the same paths as the public API.
 */
import { Hono, type Context } from 'hono'
import * as v from 'valibot'
import { TermkeepError } from '../../schema/errors.ts'
import { DEFAULT_OUTPUT_PAGE_ITEMS, MAX_INPUT_BYTES } from '../../schema/limits.ts'
import { AttachmentId, Geometry, IDEMPOTENCY_KEY_HEADER, IdempotencyKey, SessionId, TerminalId } from '../../schema/wire/common.ts'
import { ASCIICAST_CONTENT_TYPE, OutputQuery, type OutputPage, WatchQuery } from '../../schema/wire/output.ts'
import {
  ATTACHMENT_HEADER,
  CreateTerminal,
  FollowQuery,
  PRINCIPAL_HEADER,
  Principal,
  RenameTerminal,
  SendKeys,
  type Sender,
  type SentKeys,
} from '../../schema/wire/terminals.ts'
import { typedInput } from '../../schema/keys.ts'
import { pulledResponse } from '../http/pulled.ts'
import { sseResponse } from '../http/sse.ts'
import { jsonBody, parse, rawBody } from '../http/validate.ts'
import { castChunks } from '../journal/asciicast.ts'
import { watchOutput } from '../journal/watch.ts'
import { TERMINAL_TYPE, type TerminalHost } from '../terminals/host.ts'
import { follow, retain } from '../terminals/streams.ts'
import { hopMark } from '../../common/hop-trace.ts'

const LastEventId = v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'Last-Event-ID is a sequence number'), v.transform(Number))

function session(c: Context): string {
  return parse(SessionId, c.req.param('sid'), 'request/invalid')
}

function ids(c: Context): { sid: string; tid: string } {
  return { sid: session(c), tid: parse(TerminalId, c.req.param('tid'), 'terminal/invalid-id') }
}

function attachmentHeader(c: Context): string | undefined {
  const value = c.req.header(ATTACHMENT_HEADER)
  return value === undefined ? undefined : parse(AttachmentId, value, 'request/invalid')
}

function principalHeader(c: Context): string | undefined {
  const value = c.req.header(PRINCIPAL_HEADER)
  return value === undefined ? undefined : parse(Principal, value, 'request/invalid')
}

function sender(c: Context): Sender {
  return { attachment: attachmentHeader(c), principal: principalHeader(c) }
}

function idempotencyKey(c: Context): string | undefined {
  const header = c.req.header(IDEMPOTENCY_KEY_HEADER)
  return header === undefined ? undefined : parse(IdempotencyKey, header, 'request/invalid')
}

/** A bad `after` is a bad cursor; anything else (`limit`) a bad request. */
const cursorOrRequest = (keys: string[]) => (keys.includes('after') ? 'output/invalid-cursor' : 'request/invalid')

/** `after` beyond the journal's end names no sequence that exists: refused, not waited for. */
function checkCursor(after: number, last: number): void {
  if (after > last) throw new TermkeepError('output/invalid-cursor', `after=${after} is beyond the last sequence ${last}`, { after, last })
}

export function terminalRoutes(host: TerminalHost): Hono {
  const app = new Hono()
  const base = '/v1/sessions/:sid'
  const one = `${base}/terminals/:tid`

  app.get(`${base}/terminal-environment`, async (c) => c.json(await host.environment(session(c))))
  app.get(`${base}/shells`, async (c) => c.json({ shells: await host.shells(session(c)) }))
  app.get(`${base}/terminals`, async (c) => c.json({ terminals: await host.list(session(c)) }))
  app.delete(`${base}/terminals`, async (c) => c.json({ closed: await host.closeSession(session(c)) }))

  app.put(one, async (c) => {
    const { sid, tid } = ids(c)
    const body = await jsonBody(c.req.raw)
    const geometry = parse(
      Geometry,
      { cols: (body as { cols?: unknown })?.cols, rows: (body as { rows?: unknown })?.rows },
      'terminal/invalid-geometry',
    )
    const request = parse(CreateTerminal, { ...(body as object), ...geometry })
    const { info, created } = await host.create(sid, tid, request)
    return c.json(info, created ? 201 : 200)
  })
  app.get(one, async (c) => {
    const { sid, tid } = ids(c)
    return c.json(await host.info(sid, tid))
  })
  app.patch(one, async (c) => {
    const { sid, tid } = ids(c)
    return c.json(await host.rename(sid, tid, parse(RenameTerminal, await jsonBody(c.req.raw))))
  })
  app.delete(one, async (c) => {
    const { sid, tid } = ids(c)
    return c.json({ closed: true, info: await host.close(sid, tid) })
  })

  app.post(`${one}/input`, async (c) => {
    hopMark('sidecar: input route')
    const { sid, tid } = ids(c)
    const from = sender(c)
    const key = idempotencyKey(c)
    const terminal = await host.live(sid, tid)
    const bytes = await rawBody(c.req.raw, MAX_INPUT_BYTES, 'terminal/input-too-large')
    // A repeat of an applied key gets the same 204: the batch was typed, once.
    terminal.write(from, bytes, key)
    return c.body(null, 204)
  })
  app.post(`${one}/keys`, async (c) => {
    const { sid, tid } = ids(c)
    const from = sender(c)
    const key = idempotencyKey(c)
    const request = parse(SendKeys, await jsonBody(c.req.raw), 'request/invalid')
    const terminal = await host.live(sid, tid)
    const keys = request.keys ?? []
    // Only arrows and Home/End depend on a mode; the screen is asked only when a key is named.
    const modes = keys.length > 0 ? await terminal.emulator.inputModes() : {}
    const bytes = new TextEncoder().encode(typedInput(request.text ?? '', keys, modes))
    if (bytes.length > MAX_INPUT_BYTES) {
      throw new TermkeepError('terminal/input-too-large', `input is at most ${MAX_INPUT_BYTES} bytes per write`, { limit: MAX_INPUT_BYTES })
    }
    const sequence = terminal.journal.lastSequence
    const { tookControlFrom } = terminal.writeOnce(from, bytes, request.control, key)
    return c.json({ sent: bytes.length, sequence, tookControlFrom } satisfies SentKeys)
  })
  app.post(`${one}/resize`, async (c) => {
    const { sid, tid } = ids(c)
    const from = sender(c)
    const geometry = parse(Geometry, await jsonBody(c.req.raw), 'terminal/invalid-geometry')
    const terminal = await host.live(sid, tid)
    await terminal.resize(from, geometry)
    await terminal.persisted()
    return c.json(terminal.info())
  })

  app.get(`${one}/follow`, async (c) => {
    const { sid, tid } = ids(c)
    const { attachment, control } = parse(FollowQuery, c.req.query(), 'request/invalid')
    const principal = principalHeader(c)
    const lastEventId = c.req.header('last-event-id')
    const resumeAfter = lastEventId === undefined ? undefined : parse(LastEventId, lastEventId, 'output/invalid-cursor')
    const terminal = await host.live(sid, tid)
    if (resumeAfter !== undefined) checkCursor(resumeAfter, terminal.journal.lastSequence)
    return sseResponse((signal) => follow(terminal, attachment, principal, resumeAfter, signal, control), c.req.raw.signal)
  })
  app.get(`${one}/retain`, async (c) => {
    const { sid, tid } = ids(c)
    const terminal = await host.live(sid, tid)
    return sseResponse((signal) => retain(terminal, signal), c.req.raw.signal)
  })

  app.get(`${one}/output`, async (c) => {
    const { sid, tid } = ids(c)
    const query = parse(OutputQuery, c.req.query(), cursorOrRequest)
    const journal = (await host.live(sid, tid)).journal
    checkCursor(query.after, journal.lastSequence)
    const release = journal.attach()
    try {
      const items = await journal.readItems(query.after, query.limit ?? DEFAULT_OUTPUT_PAGE_ITEMS)
      const next = items.at(-1)?.sequence ?? query.after
      const page: OutputPage = {
        items,
        next,
        end: journal.ended && next >= journal.lastSequence ? 'closed' : null,
        ...(query.after === 0 ? { initialSize: journal.initialSize } : {}),
      }
      return c.json(page)
    } finally {
      release()
    }
  })
  app.get(`${one}/output/watch`, async (c) => {
    const { sid, tid } = ids(c)
    const query = parse(WatchQuery, c.req.query(), 'output/invalid-cursor')
    const lastEventId = c.req.header('last-event-id')
    const after = lastEventId === undefined ? query.after : parse(LastEventId, lastEventId, 'output/invalid-cursor')
    const journal = (await host.live(sid, tid)).journal
    checkCursor(after, journal.lastSequence)
    return sseResponse((signal) => watchOutput(journal, after, signal), c.req.raw.signal)
  })

  app.get(`${one}/output.cast`, async (c) => {
    const { sid, tid } = ids(c)
    const terminal = await host.live(sid, tid)
    const journal = terminal.journal
    const release = journal.attach()
    const meta = { startedAt: journal.startedAt, title: terminal.title, env: { TERM: TERMINAL_TYPE, SHELL: terminal.shell.path } }
    async function* chunks() {
      try {
        yield* castChunks(journal, meta)
      } finally {
        release()
      }
    }
    const encoder = new TextEncoder()
    const headers = { 'content-type': ASCIICAST_CONTENT_TYPE, 'content-disposition': `attachment; filename="${tid}.cast"` }
    // The generator's `finally` lets the spool go however the export ends (done, failed, cancelled).
    return pulledResponse(chunks, (text) => encoder.encode(text), headers, c.req.raw.signal)
  })

  return app
}
