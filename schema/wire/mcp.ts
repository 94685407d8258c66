/**
 * The MCP tools' own arguments (api/mcp/): what a tool takes beyond the route it calls, whose
 * parameters, query and body come from that route's schemas unchanged. JSON Schemas for
 * `tools/list` are generated from these and from the routes' schemas (api/mcp/input.ts).
 */
import * as v from 'valibot'
import { utf8Length } from '../utf8.ts'
import {
  MAX_INPUT_BYTES,
  MCP_PATTERN_MAX_CHARS,
  MCP_STREAM_DEFAULT_EVENTS,
  MCP_STREAM_MAX_EVENTS,
  MCP_STREAM_QUIET_DEFAULT_MS,
  MCP_STREAM_QUIET_MAX_MS,
  MCP_TEXT_MAX_BYTES,
  MCP_WAIT_DEFAULT_MS,
  MCP_WAIT_MAX_MS,
} from '../limits.ts'
import { boundedInteger, TerminalId } from './common.ts'
import { Command, KeyName } from './terminals.ts'

/** The attachment id MCP calls follow with (one per token: a token's calls share control). */
export const MCP_ATTACHMENT_ID = 'mcp'

const Milliseconds = (what: string, min: number, max = MCP_WAIT_MAX_MS) => boundedInteger(what, min, max)

const Timeout = v.optional(
  v.pipe(
    Milliseconds('timeoutMs', 0),
    v.description(`Give up after this many ms (default ${MCP_WAIT_DEFAULT_MS}, at most ${MCP_WAIT_MAX_MS})`),
  ),
  MCP_WAIT_DEFAULT_MS,
)

export const SendArgs = v.pipe(
  v.object({
    text: v.optional(v.pipe(v.string(), v.description('Typed as is, before `keys` (newlines as typed; use Enter to submit)'))),
    keys: v.optional(
      v.pipe(
        v.array(KeyName),
        v.description('tmux send-keys names, in order: Enter, Tab, C-c, M-x, Up, S-Tab, PageUp, F1–F12, or one character'),
      ),
    ),
    takeControl: v.optional(
      v.pipe(
        v.boolean(),
        v.description(
          'Type even when another client (a person) controls the terminal: takes control for this call; it is free again afterwards',
        ),
      ),
      false,
    ),
  }),
  v.check((a) => a.text !== undefined || (a.keys !== undefined && a.keys.length > 0), 'give text or keys'),
  v.check((a) => utf8Length(a.text ?? '') <= MAX_INPUT_BYTES, `text is at most ${MAX_INPUT_BYTES} bytes`),
)
export type SendArgs = v.InferOutput<typeof SendArgs>

export const WaitArgs = v.object({
  pattern: v.optional(
    v.pipe(
      v.string(),
      v.minLength(1, 'pattern is empty'),
      v.maxLength(MCP_PATTERN_MAX_CHARS, `patterns are at most ${MCP_PATTERN_MAX_CHARS} characters`),
      v.description(
        'RE2 regex (no lookaround or backreferences) matched against the screen text (history tail and viewport); (?i) for case-insensitive',
      ),
    ),
  ),
  quietMs: v.optional(
    v.pipe(Milliseconds('quietMs', 1), v.description('Done once the program printed nothing for this long (needs terminals:output)')),
  ),
  timeoutMs: Timeout,
})
export type WaitArgs = v.InferOutput<typeof WaitArgs>

export const RunArgs = v.object({
  command: v.pipe(Command, v.description('Run as `shell -c command` in a new terminal of the session')),
  tid: v.optional(v.pipe(TerminalId, v.description('Id for the new terminal (default: generated)'))),
  timeoutMs: Timeout,
})
export type RunArgs = v.InferOutput<typeof RunArgs>

/**
 * Reading an SSE route to a bound (api/mcp/stream-read.ts): events from a cursor until the stream
 * ends, nothing came for `quietMs`, `maxEvents` or `maxBytes` of data is reached, or `timeoutMs`.
 */
export const StreamReadArgs = v.object({
  quietMs: v.optional(
    v.pipe(
      Milliseconds('quietMs', 1, MCP_STREAM_QUIET_MAX_MS),
      v.description(
        `Answer once no event came for this long (default ${MCP_STREAM_QUIET_DEFAULT_MS}, at most ${MCP_STREAM_QUIET_MAX_MS}); a larger value waits longer for the next event`,
      ),
    ),
    MCP_STREAM_QUIET_DEFAULT_MS,
  ),
  timeoutMs: v.optional(
    v.pipe(
      Milliseconds('timeoutMs', 1),
      v.description(`Answer after this long whatever comes (default ${MCP_WAIT_DEFAULT_MS}, at most ${MCP_WAIT_MAX_MS})`),
    ),
    MCP_WAIT_DEFAULT_MS,
  ),
  maxEvents: v.optional(
    v.pipe(
      boundedInteger('maxEvents', 1, MCP_STREAM_MAX_EVENTS),
      v.description(`At most this many events (default ${MCP_STREAM_DEFAULT_EVENTS}, at most ${MCP_STREAM_MAX_EVENTS})`),
    ),
    MCP_STREAM_DEFAULT_EVENTS,
  ),
  maxBytes: v.optional(
    v.pipe(
      boundedInteger('maxBytes', 1, MCP_TEXT_MAX_BYTES),
      v.description(`At most this many bytes of event data (default and at most ${MCP_TEXT_MAX_BYTES}); a larger single event comes alone`),
    ),
    MCP_TEXT_MAX_BYTES,
  ),
})
export type StreamReadArgs = v.InferOutput<typeof StreamReadArgs>

export const WorkflowRunArgs = v.object({
  wait: v.optional(
    v.pipe(v.boolean(), v.description('Answer when the run ended (at most timeoutMs), with its result and members; needs workflows:read')),
    false,
  ),
  timeoutMs: v.optional(
    v.pipe(
      Milliseconds('timeoutMs', 0),
      v.description(
        `With wait: give up waiting after this many ms (default ${MCP_WAIT_DEFAULT_MS}, at most ${MCP_WAIT_MAX_MS}); the run goes on`,
      ),
    ),
    MCP_WAIT_DEFAULT_MS,
  ),
})
export type WorkflowRunArgs = v.InferOutput<typeof WorkflowRunArgs>

export const ScreenArgs = v.object({
  history: v.optional(v.pipe(v.boolean(), v.description('Include the history tail above the viewport')), false),
})
export type ScreenArgs = v.InferOutput<typeof ScreenArgs>

// ── The /mcp route (Streamable HTTP; the SDK checks the JSON-RPC message itself) ─────────────

/** One JSON-RPC 2.0 message. */
export const JsonRpcMessage = v.looseObject({ jsonrpc: v.literal('2.0', 'the body is one JSON-RPC 2.0 message ({"jsonrpc":"2.0",…})') })
/** The protocol revision that removed JSON-RPC batches; 2025-03-26 requires servers to take them. */
export const MCP_BATCHES_REMOVED_IN = '2025-06-18'
/** A POST's body: one message, or a batch of them (only where the protocol in use has batches). */
export const JsonRpcBody = v.union([JsonRpcMessage, v.pipe(v.array(JsonRpcMessage), v.minLength(1, 'a batch holds at least one message'))])

/** Streamable HTTP: a client takes both a JSON answer and an SSE stream. */
export const McpPostHeaders = v.object({
  /** Sent by clients of 2025-06-18 and later after initialization; absent means 2025-03-26. */
  'mcp-protocol-version': v.optional(v.string()),
  accept: v.pipe(
    v.string('send Accept: application/json, text/event-stream'),
    v.check(
      (accept) => accept.includes('application/json') && accept.includes('text/event-stream'),
      'Accept must name both application/json and text/event-stream',
    ),
  ),
})
