/**
 * Live terminal routes: each one is delegated to the sidecar through the typed SidecarClient (the
 * sidecar serves the same paths, schema/wire/terminals.ts and output.ts). SSE streams are relayed
 * as they arrive and torn down with the client. List and info come from libSQL instead, so they
 * work for retired terminals and with the sidecar down.
 */
import { Hono, type Context } from 'hono'
import { describeRoute } from 'hono-openapi'
import * as v from 'valibot'
import { TermkeepError } from '../../schema/errors.ts'
import { INPUT_KEY_MEMORY_MS, INPUT_KEYS_REMEMBERED, MAX_IDEMPOTENCY_KEY_CHARS, MAX_INPUT_BYTES } from '../../schema/limits.ts'
import { AttachmentId, IdempotencyKey, SessionId } from '../../schema/wire/common.ts'
import { ASCIICAST_CONTENT_TYPE, OutputPage, OutputQuery, WatchQuery } from '../../schema/wire/output.ts'
import {
  ATTACHMENT_HEADER,
  CloseResult,
  CreateTerminal,
  FollowQuery,
  RenameTerminal,
  ResizeTerminal,
  SendKeys,
  SentKeys,
  ShellList,
  TerminalEnvironment,
  TerminalInfo,
  TerminalList,
  TerminalParams,
  type Sender,
} from '../../schema/wire/terminals.ts'
import { storedTerminal, storedTerminals } from '../../storage/terminals.ts'
import { guard, openStream } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json, SIDECAR_DOWN, sidecarDownUnknown, sse } from '../openapi.ts'
import { lastEventId, relaySSE } from '../sse.ts'
import { issuesTouch, sizeLimit, validate } from '../validate.ts'
import { hopMark } from '../../common/hop-trace.ts'

const tags = ['terminals']
const SessionOnly = v.object({ sid: SessionId })
const AttachmentHeader = v.object({ 'termkeep-attachment': v.optional(AttachmentId) })
const InputHeaders = v.object({ ...AttachmentHeader.entries, 'idempotency-key': v.optional(IdempotencyKey) })
const KeysHeaders = v.object({ 'termkeep-attachment': AttachmentId, 'idempotency-key': v.optional(IdempotencyKey) })
const geometryCode = (issues: Parameters<typeof issuesTouch>[0]) =>
  issuesTouch(issues, ['cols', 'rows']) ? ('terminal/invalid-geometry' as const) : ('request/invalid' as const)

const NOT_FOUND = { 404: error('no such session or terminal (`session/not-found`, `terminal/not-found`)') }
const GONE = { 410: error('the terminal is retired or from an earlier sidecar (`terminal/unavailable`)') }
const CONTROL = { 409: error('not the controlling attachment, or not running (`terminal/control-unavailable`)') }
const LIVE = { ...NOT_FOUND, ...SIDECAR_DOWN }
/** What a retry after a 503 does, for the routes whose 503 leaves the outcome unknown. */
const RETRY = {
  create: 'Retry with the same id and body: create is idempotent on the id (200 with the terminal when the first attempt created it).',
  rename: 'Retry with the same title and name: renaming to what it has is the same answer.',
  close: 'Retry: repeated closes succeed.',
  input:
    'Retry with the same `Idempotency-Key`: a batch the sidecar already applied under it is answered 204 again and not typed twice. Without a key, a retry may type the batch twice.',
  resize: 'Retry with the same geometry: resizing to the size it has changes nothing.',
  follow:
    'Retry with the same attachment id: the sidecar may have made it the controller; attaching again is how a client reconnects anyway.',
  retain: 'Retry: a hold that was taken is released when the sidecar sees its connection gone.',
}
const liveUnknown = (retry: string) => ({ ...NOT_FOUND, ...sidecarDownUnknown(retry) })

/** Opens an upstream SSE stream and relays it; the client going away aborts the upstream. */
export function relay(c: Context<AppEnv>, open: (signal: AbortSignal) => Promise<Response>): Promise<Response> {
  return openStream(c, async (options) => {
    const upstream = new AbortController()
    // A client that leaves while the sidecar is still answering tears the request down too.
    const leave = () => upstream.abort()
    c.req.raw.signal.addEventListener('abort', leave, { once: true })
    const response = await open(upstream.signal).finally(() => c.req.raw.signal.removeEventListener('abort', leave))
    return relaySSE(response, () => upstream.abort(), options)
  })
}

/** A terminal of a host that is down: still live as far as anyone knows, but out of reach. */
function unreachable(info: TerminalInfo): TerminalInfo {
  return info.state === 'retired' || info.state === 'closed' ? info : { ...info, unreachable: true }
}

/** Input and resize come from the named follow attachment, held by this token (the principal:
 * another token that learned the attachment id from a terminal info cannot type as it). */
function sender(c: Context<AppEnv>): Sender {
  return { attachment: c.req.header(ATTACHMENT_HEADER), principal: c.var.auth.tokenId }
}

/** The Last-Event-ID header, checked, passed on verbatim. */
function resumeHeader(c: Context<AppEnv>): string | undefined {
  const id = lastEventId(c.req.header('last-event-id'))
  return id === undefined ? undefined : String(id)
}

export const terminalRoutes = new Hono<AppEnv>()
  .get(
    '/v1/sessions/:sid/terminal-environment',
    describeRoute({
      tags,
      summary: 'Working directory and limits for new terminals',
      responses: { 200: json(TerminalEnvironment), ...LIVE },
    }),
    guard('terminals:control'),
    validate('param', SessionOnly),
    async (c) => c.json(await (await c.var.fleet.forSession(c.req.valid('param').sid)).environment(c.req.valid('param').sid)),
  )
  .get(
    '/v1/sessions/:sid/shells',
    describeRoute({ tags, summary: 'Installed, verified shells, the default first', responses: { 200: json(ShellList), ...LIVE } }),
    guard('terminals:control'),
    validate('param', SessionOnly),
    async (c) => c.json(await (await c.var.fleet.forSession(c.req.valid('param').sid)).shells(c.req.valid('param').sid)),
  )
  .get(
    '/v1/sessions/:sid/terminals',
    describeRoute({
      tags,
      summary: 'Terminals of the session, live and retired (from the database)',
      responses: { 200: json(TerminalList), ...NOT_FOUND },
    }),
    guard({ anyOf: ['terminals:control', 'terminals:display'] }),
    validate('param', SessionOnly),
    async (c) => {
      const { sid } = c.req.valid('param')
      const [terminals, down] = await Promise.all([storedTerminals(c.var.deps.db, sid), c.var.fleet.downHostOf(sid)])
      return c.json({ terminals: down ? terminals.map(unreachable) : terminals })
    },
  )
  .put(
    '/v1/sessions/:sid/terminals/:tid',
    describeRoute({
      tags,
      summary: 'Create a terminal (idempotent on the id; a closed id is refused forever)',
      responses: {
        201: json(TerminalInfo, 'created'),
        200: json(TerminalInfo, 'already existed'),
        400: error('bad geometry (`terminal/invalid-geometry`), shell or id'),
        ...GONE,
        409: error('`terminal/limit-reached`'),
        ...liveUnknown(RETRY.create),
      },
    }),
    guard('terminals:control'),
    validate('param', TerminalParams),
    validate('json', CreateTerminal, { code: geometryCode }),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const { info, created } = await (await c.var.fleet.forSession(sid)).create(sid, tid, c.req.valid('json'))
      return c.json(info, created ? 201 : 200)
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid',
    describeRoute({
      tags,
      summary: 'Terminal info (from the database; works for retired terminals)',
      responses: { 200: json(TerminalInfo), ...NOT_FOUND },
    }),
    guard({ anyOf: ['terminals:control', 'terminals:display'] }),
    validate('param', TerminalParams),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const [info, down] = await Promise.all([storedTerminal(c.var.deps.db, sid, tid), c.var.fleet.downHostOf(sid)])
      return c.json(down ? unreachable(info) : info)
    },
  )
  .patch(
    '/v1/sessions/:sid/terminals/:tid',
    describeRoute({
      tags,
      summary: 'Rename: a new title (trimmed, 1–120 characters), a new name (null removes it), or both',
      description:
        'A name is what people type (`termkeep attach api:build`): a letter, then letters, digits, `.`, `_`, `-`, at most 64; unique in the session, and not the id of another of its terminals (409 `name/conflict`).',
      responses: { 200: json(TerminalInfo), 409: error('the name is taken (`name/conflict`)'), ...GONE, ...liveUnknown(RETRY.rename) },
    }),
    guard('terminals:control'),
    validate('param', TerminalParams),
    validate('json', RenameTerminal),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return c.json(await (await c.var.fleet.forSession(sid)).rename(sid, tid, c.req.valid('json')))
    },
  )
  .delete(
    '/v1/sessions/:sid/terminals/:tid',
    describeRoute({
      tags,
      summary: 'Close: kill the process group (repeated closes succeed)',
      responses: { 200: json(CloseResult), ...liveUnknown(RETRY.close) },
    }),
    guard('terminals:control'),
    validate('param', TerminalParams),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return c.json(await (await c.var.fleet.forSession(sid)).close(sid, tid))
    },
  )
  .post(
    '/v1/sessions/:sid/terminals/:tid/input',
    describeRoute({
      tags,
      summary: 'Raw input bytes (control characters included), at most 64 KiB; controller only',
      description: `An optional \`Idempotency-Key\` header (1–${MAX_IDEMPOTENCY_KEY_CHARS} visible ASCII characters) names the batch: the sidecar remembers the keys it applied to this terminal (the last ${INPUT_KEYS_REMEMBERED}, for ${INPUT_KEY_MEMORY_MS / 60_000} minutes, per token) and answers a repeat with 204 without typing it again, so a batch retried after a 503 is typed at most once. The same key with other bytes is 422 \`terminal/idempotency-key-reused\`; a malformed key is 400.`,
      requestBody: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      responses: {
        204: { description: 'accepted (or, for a repeated Idempotency-Key, accepted the first time)' },
        400: error('a malformed `Idempotency-Key` (`request/invalid`)'),
        413: error('`terminal/input-too-large`'),
        422: error('the `Idempotency-Key` was already used for other input (`terminal/idempotency-key-reused`); nothing was written'),
        409: error(
          'not the controlling attachment, or not running (`terminal/control-unavailable`); or the program has not read 1 MiB of input already sent (`terminal/input-backlog-full`)',
        ),
        ...GONE,
        ...liveUnknown(RETRY.input),
      },
    }),
    guard('terminals:control'),
    validate('param', TerminalParams),
    validate('header', InputHeaders),
    sizeLimit(MAX_INPUT_BYTES, () => {
      throw new TermkeepError('terminal/input-too-large', `input is at most ${MAX_INPUT_BYTES} bytes per write`, { limit: MAX_INPUT_BYTES })
    }),
    async (c) => {
      hopMark('API: input route (auth, grants, validation done)')
      const { sid, tid } = c.req.valid('param')
      const bytes = new Uint8Array(await c.req.arrayBuffer())
      await (await c.var.fleet.forSession(sid)).input(sid, tid, sender(c), bytes, c.req.valid('header')['idempotency-key'])
      return c.body(null, 204)
    },
  )
  .post(
    '/v1/sessions/:sid/terminals/:tid/keys',
    describeRoute({
      tags,
      summary: 'Type text, then keys by tmux name, in one write that takes control for itself and frees it again',
      description: `\`text\` is typed as is, then each of \`keys\` (tmux send-keys names: Enter, Tab, C-c, M-x, Up, S-Tab, PageUp, F1–F12, or one character); arrows and Home/End follow the terminal's application cursor mode as its screen has it. The attachment in \`Termkeep-Attachment\` takes control for this write alone, as a follow with the same \`control\` would (\`if-free\`, the default: refused with 409 \`terminal/control-unavailable\` {reason: "controlled", controllerId} while another attachment controls; \`take\`: whoever held it), and control is free again after it. The answer says whose control it took. \`Idempotency-Key\` works as for raw input.`,
      responses: {
        200: json(SentKeys, 'typed: its size, the output sequence it came after, whose control it took'),
        400: error('an unknown key name, neither text nor keys, or a malformed `Idempotency-Key` (`request/invalid`)'),
        413: error('`terminal/input-too-large`'),
        422: error('the `Idempotency-Key` was already used for other input (`terminal/idempotency-key-reused`); nothing was written'),
        409: error(
          'another attachment controls it and `control` is `if-free`, or not running (`terminal/control-unavailable`); or the program has not read 1 MiB of input already sent (`terminal/input-backlog-full`)',
        ),
        ...GONE,
        ...liveUnknown(RETRY.input),
      },
    }),
    guard('terminals:control'),
    validate('param', TerminalParams),
    validate('header', KeysHeaders),
    validate('json', SendKeys),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return c.json(
        await (await c.var.fleet.forSession(sid)).sendKeys(
          sid,
          tid,
          sender(c),
          c.req.valid('json'),
          c.req.valid('header')['idempotency-key'],
        ),
      )
    },
  )
  .post(
    '/v1/sessions/:sid/terminals/:tid/resize',
    describeRoute({
      tags,
      summary: 'Resize (2–1,024 columns, 1–1,024 rows, ≤ 65,536 cells); controller only',
      responses: { 200: json(TerminalInfo), 400: error('`terminal/invalid-geometry`'), ...CONTROL, ...GONE, ...liveUnknown(RETRY.resize) },
    }),
    guard('terminals:control'),
    validate('param', TerminalParams),
    validate('header', AttachmentHeader),
    validate('json', ResizeTerminal, { code: 'terminal/invalid-geometry' }),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return c.json(await (await c.var.fleet.forSession(sid)).resize(sid, tid, sender(c), c.req.valid('json')))
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid/follow',
    describeRoute({
      tags,
      summary: 'Attach: screen snapshot, then output and state; the newest attachment controls input',
      description:
        '`control=if-free` attaches only when no other attachment controls the terminal (else 409 `terminal/control-unavailable` {reason: `controlled`}); the default `take` takes control from whoever held it.',
      responses: {
        200: sse('snapshot, then output and state', ['snapshot', 'output', 'state']),
        ...CONTROL,
        ...GONE,
        ...liveUnknown(RETRY.follow),
      },
    }),
    guard({ allOf: ['terminals:control', 'terminals:output'] }),
    validate('param', TerminalParams),
    validate('query', FollowQuery),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const { attachment, control } = c.req.valid('query')
      const resume = resumeHeader(c)
      const principal = c.var.auth.tokenId
      return relay(c, async (signal) =>
        (await c.var.fleet.forSession(sid)).follow(sid, tid, { attachment, control, principal, lastEventId: resume }, signal),
      )
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid/retain',
    describeRoute({
      tags,
      summary: 'Hold: keeps an idle terminal from being reclaimed while open',
      responses: { 200: sse('a hold', ['retained']), ...GONE, ...liveUnknown(RETRY.retain) },
    }),
    guard('terminals:control'),
    validate('param', TerminalParams),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return relay(c, async (signal) => (await c.var.fleet.forSession(sid)).retain(sid, tid, signal))
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid/output',
    describeRoute({
      tags,
      summary: 'readOutput: a bounded page of output items after a cursor, and the next cursor',
      responses: { 200: json(OutputPage), 400: error('`output/invalid-cursor`'), ...GONE, ...LIVE },
    }),
    guard('terminals:output'),
    validate('param', TerminalParams),
    validate('query', OutputQuery),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return c.json(await (await c.var.fleet.forSession(sid)).readOutput(sid, tid, c.req.valid('query')))
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid/output/watch',
    describeRoute({
      tags,
      summary: 'watchOutput: every byte and resize after `after` (or Last-Event-ID), live',
      responses: {
        200: sse('begin, then items until closed or unavailable', ['begin', 'data', 'resize', 'closed', 'unavailable']),
        ...GONE,
        ...LIVE,
      },
    }),
    guard('terminals:output'),
    validate('param', TerminalParams),
    validate('query', WatchQuery),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const resume = resumeHeader(c)
      const after = resume === undefined ? c.req.valid('query').after : Number(resume)
      return relay(c, async (signal) => (await c.var.fleet.forSession(sid)).watchOutput(sid, tid, { after, lastEventId: resume }, signal))
    },
  )
  .get(
    '/v1/sessions/:sid/terminals/:tid/output.cast',
    describeRoute({
      tags,
      summary: 'The output so far as an asciicast v2 recording (`asciinema play`, `asciinema cat`), streamed',
      description:
        'A header line (width and height: the size before the first record; timestamp: the terminal\'s start), then `[seconds, "o", text]` per output record and `[seconds, "r", "COLSxROWS"]` per resize, at the times the records arrived. Text is UTF-8 decoded across records; bytes that are not UTF-8 become U+FFFD. A terminal without output answers the header alone.',
      responses: {
        200: { description: 'the recording', content: { [ASCIICAST_CONTENT_TYPE]: { schema: { type: 'string' as const } } } },
        ...GONE,
        ...LIVE,
      },
    }),
    guard('terminals:output'),
    validate('param', TerminalParams),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const upstream = await (await c.var.fleet.forSession(sid)).cast(sid, tid, c.req.raw.signal)
      // Passed on as it arrives (never buffered whole); a client that leaves cancels the body,
      // which tears the sidecar request down.
      const headers = {
        'content-type': ASCIICAST_CONTENT_TYPE,
        'content-disposition': upstream.headers.get('content-disposition') ?? 'attachment',
      }
      return new Response(upstream.body, { status: 200, headers })
    },
  )
