/**
 * The live-terminal contract. The sidecar implements these routes under the same paths as the
 * public API (`/v1/sessions/:sid/terminals/...`); the API's sidecar client mirrors them method for
 * method. Terminal info is also persisted in libSQL, so the API serves list/info without the
 * sidecar.
 *
 * Routes (sidecar and API alike):
 *   GET    /v1/sessions/:sid/terminal-environment          → TerminalEnvironment
 *   GET    /v1/sessions/:sid/shells                        → ShellList
 *   GET    /v1/sessions/:sid/terminals                     → TerminalList
 *   PUT    /v1/sessions/:sid/terminals/:tid   CreateTerminal → TerminalInfo (201 new, 200 existing)
 *   GET    /v1/sessions/:sid/terminals/:tid                → TerminalInfo
 *   PATCH  /v1/sessions/:sid/terminals/:tid   RenameTerminal → TerminalInfo
 *   DELETE /v1/sessions/:sid/terminals/:tid                → CloseResult (repeatable)
 *   POST   /v1/sessions/:sid/terminals/:tid/input   raw bytes, header Termkeep-Attachment → 204
 *   POST   /v1/sessions/:sid/terminals/:tid/resize  Geometry, header Termkeep-Attachment → TerminalInfo
 *   GET    /v1/sessions/:sid/terminals/:tid/follow?attachment=ID   SSE FollowEvent
 *   GET    /v1/sessions/:sid/terminals/:tid/retain                 SSE `retained`, then heartbeats
 */
import * as v from 'valibot'
import { keyBytes } from '../keys.ts'
import { MAX_COMMAND_CHARS, MAX_INPUT_BYTES, MAX_NAME_CHARS, MAX_TITLE_CHARS, MAX_VISIBLE_CELLS, NAME_PATTERN } from '../limits.ts'
import { utf8Length } from '../utf8.ts'
import { AttachmentId, CELLS_MESSAGE, Cols, Geometry, Rows, SessionId, TerminalId, titleSchema } from './common.ts'

/** Header naming the follow attachment that sends input or resizes. */
export const ATTACHMENT_HEADER = 'Termkeep-Attachment'
/**
 * Sidecar contract only: the principal behind a follow, an input or a resize (the API sends its
 * caller's token id; clients of the API never send it). Control needs the attachment id and the
 * principal of the follow that holds it, so a token that learned another's attachment id (it is
 * in every terminal info) cannot type as it.
 */
export const PRINCIPAL_HEADER = 'Termkeep-Principal'
/** Who sends input or a resize: the follow attachment's id, and the principal behind it. */
export interface Sender {
  attachment: string | undefined
  principal?: string
}
export const Principal = v.pipe(v.string(), v.regex(/^[\w-]{1,128}$/, 'principals are 1–128 of [A-Za-z0-9_-]'))

export const TerminalShell = v.object({
  path: v.string(),
  args: v.array(v.string()),
  name: v.string(),
})
export type TerminalShell = v.InferOutput<typeof TerminalShell>

export const TerminalEnvironment = v.object({
  cwd: v.string(),
  limits: v.object({
    maxInputBytes: v.number(),
    minCols: v.number(),
    maxCols: v.number(),
    minRows: v.number(),
    maxRows: v.number(),
    maxVisibleCells: v.number(),
    historyCells: v.number(),
    maxTerminals: v.number(),
  }),
})
export type TerminalEnvironment = v.InferOutput<typeof TerminalEnvironment>

export const ShellList = v.object({ shells: v.array(TerminalShell) })
export type ShellList = v.InferOutput<typeof ShellList>

/** A terminal's states, in the only order it moves through them (a contract: stored and sent as is). */
export const TERMINAL_STATES = ['starting', 'running', 'exited', 'closed', 'retired'] as const
export const TerminalState = v.picklist(TERMINAL_STATES)
export type TerminalState = (typeof TERMINAL_STATES)[number]
/** Where a terminal's command marks come from (docs/commands.md). */
export const COMMAND_MARKS = ['injected', 'detected', 'none'] as const
export type CommandMarks = (typeof COMMAND_MARKS)[number]

/** A workflow run's sub-agent terminal: its run and its member seq (schema/wire/workflows.ts). */
export const TerminalWorkflow = v.object({ run: v.string(), seq: v.number() })
export type TerminalWorkflow = v.InferOutput<typeof TerminalWorkflow>

export const TerminalInfo = v.object({
  sessionId: SessionId,
  id: TerminalId,
  title: v.string(),
  shell: TerminalShell,
  /** The initial working directory. */
  cwd: v.string(),
  cols: v.number(),
  rows: v.number(),
  state: TerminalState,
  exitCode: v.nullable(v.number()),
  exitSignal: v.nullable(v.number()),
  error: v.nullable(v.string()),
  hostGeneration: v.number(),
  /** The follow attachment that currently controls input (live terminals only). */
  controllerId: v.nullable(v.string()),
  createdAt: v.number(),
  updatedAt: v.number(),
  /** When it was closed (DELETE): a closed or retired terminal with this set was ended on request;
   * a retired one without it ended with its sidecar (stopped, crashed or restarted). */
  closedAt: v.nullable(v.number()),
  /** The program in the foreground (its argv[0]'s name, like tmux's pane_current_command):
   * `vim` while vim runs, the shell's name at its prompt; null once the program exited. */
  foregroundCommand: v.nullable(v.string()),
  /** Only on a workflow run's sub-agent terminal. */
  workflow: v.optional(TerminalWorkflow),
  /** A name people type (`termkeep attach api:build`), unique in the session; null: none. */
  name: v.nullable(v.string()),
  /** Where its command marks come from (docs/commands.md): `injected` (termkeep's shell
   * integration), `detected` (a prompt that emits them itself) or `none` (no command records). */
  commandMarks: v.picklist(COMMAND_MARKS),
  /** Only while its host is down (GET /v1/hosts): its state is the last one known, and it is
   * retired only if the host comes back without it. */
  unreachable: v.optional(v.literal(true)),
})
export type TerminalInfo = v.InferOutput<typeof TerminalInfo>

export const TerminalList = v.object({ terminals: v.array(TerminalInfo) })
export type TerminalList = v.InferOutput<typeof TerminalList>

export const Title = titleSchema(MAX_TITLE_CHARS, 'titles')

/** A session's or terminal's name (docs/api.md#names): a letter, then letters, digits, `.`, `_`, `-`. */
export const Name = v.pipe(
  v.string(),
  v.maxLength(MAX_NAME_CHARS, `names are at most ${MAX_NAME_CHARS} characters`),
  v.regex(NAME_PATTERN, 'names start with a letter, then letters, digits, `.`, `_` or `-` (no `:`, no spaces)'),
)

/** A command the shell runs instead of an interactive session (`shell -c command`). */
export const Command = v.pipe(
  v.string(),
  v.minLength(1, 'command is empty'),
  v.maxLength(MAX_COMMAND_CHARS, `commands are at most ${MAX_COMMAND_CHARS} characters`),
  v.check((s) => !s.includes('\0'), 'commands cannot contain NUL'),
)

/**
 * PUT body. `shell` is a path from the shell list; absent means the default shell. `command`
 * makes the terminal run `shell -c command` instead of an interactive shell: the terminal exits
 * with the command, and its output and screen stay readable until it is closed.
 */
export const CreateTerminalFields = v.object({
  shell: v.optional(v.string()),
  cols: Cols,
  rows: Rows,
  title: v.optional(Title),
  command: v.optional(Command),
  /** A name people type, unique in the session (409 `name/conflict` when taken). */
  name: v.optional(Name),
  /** termkeep's shell integration for bash, zsh and fish (docs/commands.md); default true. */
  shellIntegration: v.optional(v.boolean()),
})
export const CreateTerminal = v.pipe(
  CreateTerminalFields,
  v.check((g) => g.cols * g.rows <= MAX_VISIBLE_CELLS, CELLS_MESSAGE),
)
export type CreateTerminal = v.InferOutput<typeof CreateTerminal>

/** A new title, name (null removes it), or both. */
export const RenameTerminal = v.pipe(
  v.object({ title: v.optional(Title), name: v.optional(v.nullable(Name)) }),
  v.check((r) => r.title !== undefined || r.name !== undefined, 'give a title or a name'),
)
export type RenameTerminal = v.InferOutput<typeof RenameTerminal>
export const ResizeTerminal = Geometry

export const CloseResult = v.object({ closed: v.literal(true), info: TerminalInfo })
export type CloseResult = v.InferOutput<typeof CloseResult>

export const TerminalParams = v.object({ sid: SessionId, tid: TerminalId })
/**
 * How a follow treats control: `take` (the default) makes its attachment the controller whoever
 * held it; `if-free` attaches only when no other attachment controls the terminal, else 409
 * `terminal/control-unavailable` {reason: 'controlled'} before the stream starts (an agent typing
 * for one call must not take the keyboard from a person; the check and the attach are one step).
 */
export const FOLLOW_CONTROL = ['take', 'if-free'] as const
export const FollowQuery = v.object({ attachment: AttachmentId, control: v.optional(v.picklist(FOLLOW_CONTROL), 'take') })
export type FollowControl = (typeof FOLLOW_CONTROL)[number]

/** A key by its tmux send-keys name (schema/keys.ts). */
export const KeyName = v.pipe(
  v.string(),
  v.check(
    (name) => keyBytes(name) !== undefined,
    (issue) => `not a key name: ${JSON.stringify(issue.input)} (Enter, Tab, C-c, M-x, Up, PageDown, F5, a single character …)`,
  ),
)

/**
 * POST …/keys: `text` as is, then `keys` by tmux name, in one write; arrows and Home/End follow
 * the terminal's application cursor mode as its screen has it. The write takes control for
 * itself as a follow with the same `control` would (`if-free`, the default: refused while
 * another attachment controls), and frees it again: one request types, with no follow.
 */
export const SendKeys = v.pipe(
  v.object({
    text: v.optional(v.string()),
    keys: v.optional(v.array(KeyName)),
    control: v.optional(v.picklist(FOLLOW_CONTROL), 'if-free'),
  }),
  v.check((a) => a.text !== undefined || (a.keys !== undefined && a.keys.length > 0), 'give text or keys'),
  v.check((a) => utf8Length(a.text ?? '') <= MAX_INPUT_BYTES, `text is at most ${MAX_INPUT_BYTES} bytes`),
)
export type SendKeys = v.InferOutput<typeof SendKeys>

/** What a send-keys write typed: its size, the output sequence it came after, and whose control
 * it took (null when nobody else held it). */
export const SentKeys = v.object({ sent: v.number(), sequence: v.number(), tookControlFrom: v.nullable(v.string()) })
export type SentKeys = v.InferOutput<typeof SentKeys>

/**
 * Follow SSE events (`event:` name → `data:` JSON). `snapshot` and `output` carry
 * `id: <sequence>`; a follow reconnecting with `Last-Event-ID` skips the snapshot, gets one `state`
 * frame, then output after that sequence (a sequence beyond the journal is 400
 * `output/invalid-cursor`).
 *   snapshot  the screen as ANSI (serialized emulator state at `sequence`, ending with explicit
 *             cursor position and visibility), plus the terminal info at that sequence's geometry
 *   output    base64 bytes after the snapshot, in order (adjacent records coalesced, ≤ 64 KiB)
 *   state     terminal info changed. A Resize record in the output becomes a `state` frame in
 *             output order with `id: <sequence>`; title and controller changes go out at once;
 *             lifecycle changes (exited, closed) after the output that preceded them. The geometry
 *             in a state frame is always the one the stream has reached.
 * The stream ends after the terminal closed and its output was delivered. Input and resize need
 * the follow's attachment id in `Termkeep-Attachment` while it is the controller; otherwise 409
 * `terminal/control-unavailable` {reason: 'read-only' | 'not-running'}.
 */
export const FollowSnapshot = v.object({
  sequence: v.number(),
  screen: v.string(),
  info: TerminalInfo,
  /** The terminal's command-mark nonce, when termkeep integrated its shell (docs/commands.md): a
   * client tells the shell's marks in the output from printed ones by it. A follower reads the
   * output, which carries it anyway; nothing else hands it out. */
  marks: v.optional(v.string()),
})
export const FollowOutput = v.object({ sequence: v.number(), data: v.string() })
export const FollowState = v.object({
  info: TerminalInfo,
  /**
   * Only on the first frame of a follow resumed with Last-Event-ID: the last sequence journaled
   * when the resume was answered. Output up to it is replayed backlog (a client must not answer
   * terminal queries in it); output after it is live.
   */
  replayThrough: v.optional(v.number()),
})
export type FollowSnapshot = v.InferOutput<typeof FollowSnapshot>
export type FollowOutput = v.InferOutput<typeof FollowOutput>
