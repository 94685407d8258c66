/**
 * The command contract (docs/commands.md): what a terminal's shell ran, derived from the command
 * marks in its journal, and running one command in an existing shell.
 *
 *   GET  /v1/sessions/:sid/terminals/:tid/commands?after=&before=&limit=   → CommandPage (API, libSQL)
 *   GET  /v1/sessions/:sid/terminals/:tid/commands/:n                      → CommandRecord (API, libSQL)
 *   GET  /v1/sessions/:sid/terminals/:tid/commands/:n/output               → CommandOutput (text)
 *   GET  /v1/sessions/:sid/terminals/:tid/commands/:n/output.bin           → the exact bytes (live only)
 *   GET  /v1/sessions/:sid/terminals/:tid/commands/watch                   SSE `start`, `end`, `closed`
 *   POST /v1/sessions/:sid/terminals/:tid/commands   RunCommand            → CommandRun
 *
 * Cursors: a command's output is the journal's Data records after `start` through `end`, less the
 * first `startSkip` bytes (the rest of the record that held the output-start mark) and all bytes
 * of record `end` after its first `endLength` (the end mark and what follows). So
 * `readOutput(after: start)` up to sequence `end` holds exactly its bytes and a little around them.
 *
 * Watch: event `start` (id 2n−1) and `end` (id 2n), data = the record; resumable with
 * Last-Event-ID; `closed` once the terminal's output ended and every command was reported.
 */
import * as v from 'valibot'
import { utf8Length } from '../utf8.ts'
import {
  COMMAND_RUN_DEFAULT_TIMEOUT_MS,
  COMMAND_RUN_MAX_TIMEOUT_MS,
  COMMANDS_PAGE_DEFAULT,
  COMMANDS_PAGE_MAX,
  MAX_RUN_COMMAND_BYTES,
} from '../limits.ts'
import { boundedInteger, pageLimit } from './common.ts'
import { TerminalParams } from './terminals.ts'

export const COMMAND_STATES = ['running', 'ended'] as const

export const CommandRecord = v.object({
  n: v.number(),
  /** The command line as the shell reported it ('' when it did not). */
  command: v.string(),
  /** The directory it started in (null: the shell did not say). */
  cwd: v.nullable(v.string()),
  state: v.picklist(COMMAND_STATES),
  /** Output cursors (see above). `end` and `endLength` are null while it runs. */
  start: v.number(),
  startSkip: v.number(),
  end: v.nullable(v.number()),
  endLength: v.nullable(v.number()),
  /** Null while it runs, and when the shell reported none (the terminal ended first). */
  exitCode: v.nullable(v.number()),
  startedAt: v.number(),
  endedAt: v.nullable(v.number()),
  /** `injected`: marks carrying the terminal's nonce; `detected`: a prompt's own marks. */
  marks: v.picklist(['injected', 'detected']),
  /** Output bytes between the marks (null while it runs). */
  outputBytes: v.nullable(v.number()),
})
export type CommandRecord = v.InferOutput<typeof CommandRecord>

export const CommandParams = v.object({
  ...TerminalParams.entries,
  n: v.pipe(v.string(), v.regex(/^[1-9]\d{0,14}$/, 'n is a command number (1, 2, 3 …)'), v.transform(Number)),
})

const Cursor = v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'a command number'), v.transform(Number))
/** Without `after`: the newest `limit` (before `before`, if given); with it: the oldest after it. */
export const CommandsQuery = v.object({
  after: v.optional(Cursor),
  before: v.optional(Cursor),
  limit: v.optional(pageLimit(COMMANDS_PAGE_MAX), String(COMMANDS_PAGE_DEFAULT)),
})
export type CommandsQuery = v.InferOutput<typeof CommandsQuery>

/** Oldest first (newest last); `newest` is the highest n recorded so far (0: none). */
export const CommandPage = v.object({ commands: v.array(CommandRecord), newest: v.number() })
export type CommandPage = v.InferOutput<typeof CommandPage>

/** A command's output as plain text, cut from the front to COMMAND_TEXT_MAX_BYTES. */
export const CommandOutput = v.object({
  n: v.number(),
  state: v.picklist(COMMAND_STATES),
  text: v.string(),
  /** Output bytes before the ones the text shows. */
  omittedBytes: v.number(),
  outputBytes: v.number(),
})
export type CommandOutput = v.InferOutput<typeof CommandOutput>

/** The attachment a run takes control with while it types, when the caller names none of its own
 * (schema/wire/terminals.ts: input needs control; a person's attachment holding it refuses the run). */
export const RUN_ATTACHMENT_ID = 'command'

/** Control characters a command may not hold: every C0 but tab, DEL, and the C1 range. */
const FORBIDDEN = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/

export const RunCommand = v.object({
  command: v.pipe(
    v.string(),
    v.check((s) => s.trim().length > 0, 'command is empty'),
    v.check((s) => !s.includes('\0'), 'commands cannot contain NUL'),
    v.check((s) => !FORBIDDEN.test(s), 'commands cannot contain control characters other than tab'),
    v.check((s) => utf8Length(s) <= MAX_RUN_COMMAND_BYTES, `commands are at most ${MAX_RUN_COMMAND_BYTES} bytes`),
  ),
  timeoutMs: v.optional(boundedInteger('timeoutMs', 1, COMMAND_RUN_MAX_TIMEOUT_MS), COMMAND_RUN_DEFAULT_TIMEOUT_MS),
})
export type RunCommand = v.InferOutput<typeof RunCommand>

/** What a run answers: the command's record, its output as text, where the shell is now. */
export const CommandRun = v.object({
  /** Null when no command started: the shell came back to its prompt without one (a parse error
   * in zsh), or none started within `timeoutMs`. */
  command: v.nullable(CommandRecord),
  /** False when the command did not end within `timeoutMs` (it goes on; watch or read it later). */
  ended: v.boolean(),
  exitCode: v.nullable(v.number()),
  text: v.string(),
  omittedBytes: v.number(),
  /** The shell's directory once it was back at its prompt (null: not reported, or still running). */
  cwd: v.nullable(v.string()),
  /** From the command's start to its end (or to the answer, while it runs). */
  durationMs: v.number(),
})
export type CommandRun = v.InferOutput<typeof CommandRun>
