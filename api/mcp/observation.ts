/**
 * The observation tools (routes: api/observation/routes.ts, docs/observation.md). One tool per
 * JSON operation, generated from OBSERVATION_OPERATIONS — the table the API mounts its routes
 * from — so each tool's name, body schema and grant are the route's own and no schema is copied;
 * `observe_context` is the context route, and `observe_follow` reads the follow stream from a
 * cursor to a bound (stream-read.ts), its chunks shown as text when they are UTF-8; it takes its
 * handle as `{id}`, as every other observe_* tool does (the route takes the id in its URL).
 */
import * as v from 'valibot'
import { FollowFileQuery, Handle, type FileBytes, type FollowChunk } from '../../schema/wire/observation.ts'
import {
  OBSERVATION_OPERATIONS,
  observationPath,
  type ObservationOperation,
  type ObservationOperationName,
} from '../../schema/wire/observation-operations.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import type { StreamEvent } from './events.ts'
import { streamReadTool } from './stream-read.ts'
import { fromBase64 } from '../../common/bytes.ts'
import { shownBytes } from './text.ts'
import { jsonResult, routeTool, T, type CallToolResult, type Tool } from './tool.ts'

const O = `${T}/observation`
const READ = { readOnlyHint: true, openWorldHint: false }

/** What an agent needs beyond the operation's summary. */
const NOTES: Partial<Record<ObservationOperationName, string>> = {
  descendants: 'Each process has a handle for observe_open_files.',
  openFiles: '`processes`: handles (or whole snapshots) from observe_descendants or observe_context; `access`: readable or writable.',
  environment: 'Every name must be declared on the token (observeEnvironment), else observe/undeclared.',
  resolveHomeDirectory:
    "`relativePath` below HOME, e.g. `.codex/sessions` (no leading /, no ..); use the handle as observe_list_directory's `root`.",
  resolveDirectoryRelativeToEnvironment: 'The variable must be declared on the token.',
  resolveRelativeToEnvironment: 'The variable must be declared on the token.',
  resolvePathUnderEnvironment: 'The variable must be declared on the token.',
  environmentRelativePath: 'The variable must be declared on the token.',
  listDirectory:
    'All four limits are required. Entries are oldest modification first: the last one is the newest (the journal to follow); each has a file handle.',
  read: 'The text when the bytes are valid UTF-8 (`encoding: "utf8"`), else base64 (`encoding: "base64"`, `bytes`).',
  readJsonLine: '`position`: first or last record (the last line of a journal is its newest).',
}

/** How a tool shows an operation's answer, where JSON as it came is not the best form. */
const PRESENT: Partial<Record<ObservationOperationName, (value: unknown) => CallToolResult>> = {
  read: (value) => {
    const { data, ...facts } = value as FileBytes
    return jsonResult({ ...shownBytes(fromBase64(data)), ...facts })
  },
}

/** Pure: a seed method's name as a tool's (`readJsonLine` → `observe_read_json_line`). */
export function observeToolName(operation: string): string {
  return `observe_${operation.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`
}

function operationTool(name: ObservationOperationName, operation: ObservationOperation): Tool {
  return routeTool({
    name: observeToolName(name),
    title: `Observation: ${name}`,
    description: [`${operation.summary}.`, NOTES[name]].filter(Boolean).join(' '),
    annotations: READ,
    method: 'POST',
    path: `${T}/${observationPath(name)}`,
    params: TerminalParams,
    body: operation.request,
    present: PRESENT[name],
  })
}

interface Chunk {
  type: string
  offset: number
  bytes: Uint8Array
}

/** Pure: follow events as chunks, each append merged into the chunk it continues (contiguous by
 * the route's contract), shown as text when valid UTF-8. */
export function followChunks(events: readonly StreamEvent[]): { chunks: Record<string, unknown>[] } {
  const chunks: Chunk[] = []
  for (const event of events) {
    const data = JSON.parse(event.data) as FollowChunk
    const bytes = fromBase64(data.bytes)
    const last = chunks.at(-1)
    if (event.event === 'append' && last && last.offset + last.bytes.length === data.offset) {
      const joined = new Uint8Array(last.bytes.length + bytes.length)
      joined.set(last.bytes)
      joined.set(bytes, last.bytes.length)
      last.bytes = joined
    } else chunks.push({ type: event.event, offset: data.offset, bytes })
  }
  return { chunks: chunks.map(({ type, offset, bytes }) => ({ type, offset, length: bytes.length, ...shownBytes(bytes) })) }
}

export const OBSERVATION_TOOLS: readonly Tool[] = [
  routeTool({
    name: 'observe_context',
    title: 'Observation context',
    description:
      "What runs in a terminal: the foreground program {executableName, arguments, startedAt} (vim while vim runs, the shell at its prompt), the tty when proven, opaque handles (terminal, project, environment, process) and this token's observation capabilities.",
    annotations: READ,
    method: 'GET',
    path: O,
    params: TerminalParams,
  }),
  ...(Object.entries(OBSERVATION_OPERATIONS) as [ObservationOperationName, ObservationOperation][]).map(([name, operation]) =>
    operationTool(name, operation),
  ),
  streamReadTool({
    name: 'observe_follow',
    title: 'Follow a file (read since a cursor)',
    description:
      "A file's bytes since cursor `after` (absent: from its start), what is there and what is written meanwhile, read to a bound (quietMs, maxEvents, maxBytes of event data, timeoutMs). " +
      '`handle` is a file handle `{id}` as the other observe_* tools give and take it, e.g. the last entry of observe_list_directory. Chunks: `append` continues the content at `offset`; ' +
      '`truncate` (the file was cut or rewritten) and `replace` (the path names another file now: rotated, replaced) start it over at offset 0. ' +
      'Each chunk is text when valid UTF-8 (`encoding: "utf8"`), else base64 (`encoding: "base64"`, `bytes`). ' +
      'Pass `next` back as `after` to read on: no byte is repeated or skipped. After a rotation while you were away the answer starts with `replace` ' +
      '(what the old file got after your cursor is not in it: the path no longer leads there).',
    path: `${O}/files/follow`,
    params: TerminalParams,
    query: v.omit(FollowFileQuery, ['handle']),
    shaped: { schema: v.object({ handle: Handle }), query: (args) => ({ handle: (args.handle as Handle).id }) },
    cursor: 'after',
    summarize: followChunks,
  }),
]
