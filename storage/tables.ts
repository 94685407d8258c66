/**
 * The libSQL tables (drizzle). drizzle-kit turns this file into `migrations/`; after changing it
 * run `npm run db:generate`, which also refreshes the bundled form for edge runtimes.
 *
 * Times are integer milliseconds since the epoch. Nothing a query filters on is hidden in JSON.
 */
import { sql } from 'drizzle-orm'
import { blob, customType, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { COMMAND_MARKS, TERMINAL_STATES } from '../schema/wire/terminals.ts'
import { AGENT_OUTCOMES, RUN_LIMITS, WORKFLOW_EVENT_TYPES, WORKFLOW_STATUSES } from '../schema/wire/workflows.ts'

const now = sql`(CAST(unixepoch('subsec') * 1000 AS INTEGER))`

/** A BLOB as plain bytes on every runtime (no Buffer: the API also runs on Workers and Deno). */
const bytes = customType<{ data: Uint8Array; driverData: ArrayBuffer | Uint8Array }>({
  dataType: () => 'blob',
  fromDriver: (value) => (value instanceof Uint8Array ? value : new Uint8Array(value)),
})

// ── Workspace registry ──────────────────────────────────────────────────────

export const workspaces = sqliteTable(
  'workspaces',
  {
    id: text('id').primaryKey(),
    /** Canonical (realpath) directory on its host; one workspace per directory and host. */
    path: text('path').notNull(),
    /** Display title, unique across workspaces. */
    title: text('title').notNull().unique(),
    /** Position in the user's order (ascending). */
    position: real('position').notNull(),
    createdAt: integer('created_at').notNull().default(now),
    updatedAt: integer('updated_at').notNull().default(now),
    /** The host the directory is on (hosts.id); null in rows written before workspaces had hosts,
     * which the first host to start takes over (storage/hosts.ts `adoptUnhosted`). */
    hostId: text('host_id'),
  },
  // Two NULL hosts are distinct to SQLite: a row without a host is kept unique by its writers
  // (api/registry/operations.ts), which look a path up on a host and on no host alike.
  (t) => [uniqueIndex('workspaces_host_path').on(t.hostId, t.path)],
)

export const sessions = sqliteTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    /** The session's recorded working directory, canonical when it could be resolved. */
    cwd: text('cwd').notNull(),
    title: text('title'),
    createdAt: integer('created_at').notNull().default(now),
    /** A name people type (`termkeep attach api`), unique across sessions; null: none. */
    name: text('name').unique(),
    /** The host its terminals and files live on (hosts.id); null in rows written before hosts
     * existed, which belong to the only host there is (api/hosts/). */
    hostId: text('host_id'),
  },
  (t) => [index('sessions_host').on(t.hostId)],
)

/** The ordered account of sessions listed under a workspace. Membership also needs the cwd match. */
export const workspaceSessions = sqliteTable(
  'workspace_sessions',
  {
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    position: real('position').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.sessionId] }), index('workspace_sessions_session').on(t.sessionId)],
)

/** The global archive set; a session keeps its workspace slot while archived. */
export const archivedSessions = sqliteTable('archived_sessions', {
  sessionId: text('session_id')
    .primaryKey()
    .references(() => sessions.id, { onDelete: 'cascade' }),
  archivedAt: integer('archived_at').notNull().default(now),
})

/** Ordered change log behind `GET /v1/workspaces/watch`; `seq` is the SSE event id. */
export const registryEvents = sqliteTable('registry_events', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  kind: text('kind', { enum: ['upsert', 'remove', 'order', 'archived'] }).notNull(),
  /** The increment exactly as the watch stream sends it. */
  payload: text('payload', { mode: 'json' }).notNull(),
  createdAt: integer('created_at').notNull().default(now),
})

// ── Terminals ───────────────────────────────────────────────────────────────

/**
 * The last write each component's health proved it could make (one row per writer: `api`,
 * `sidecar`): `SELECT 1` answers on a database that cannot be written (read-only, full, locked),
 * so health writes here, at most every DB_WRITE_PROBE_MS.
 */
export const healthProbes = sqliteTable('health_probes', {
  writer: text('writer').primaryKey(),
  checkedAt: integer('checked_at').notNull(),
})

/**
 * One row per host: a machine (or a data directory standing in for one) whose sidecar serves the
 * sessions that name it. The id is the sidecar's own, kept in its data directory; the rest is what
 * its latest start registered. Whether it is up is its newest generation's heartbeat.
 */
export const hosts = sqliteTable('hosts', {
  id: text('id').primaryKey(),
  /** TERMKEEP_HOST, else the machine's hostname; not unique (a selector by name must be). */
  name: text('name').notNull(),
  /** Where the API reaches its sidecar (TERMKEEP_HOST_URL, else the address it listens on). */
  url: text('url').notNull(),
  /** The termkeep version it runs. */
  version: text('version').notNull(),
  /** Capacity: processors and memory of the machine, as its sidecar saw them at start. */
  cpus: integer('cpus').notNull(),
  memoryBytes: integer('memory_bytes').notNull(),
  /** Bumped by each rotation of this host's secret (`termkeep hosts rotate`): the secret is derived
   * from the fleet secret, the id and this, so a rotation changes neither the id nor another
   * host's secret. 0: never rotated. */
  secretEpoch: integer('secret_epoch').notNull().default(0),
  registeredAt: integer('registered_at').notNull().default(now),
  updatedAt: integer('updated_at').notNull().default(now),
})

/**
 * One row per sidecar start; terminals remember the generation that owned them. A sidecar records
 * who runs it, so that the next one can tell whether it still does before it retires its
 * terminals (sidecar/generations): on the same host and boot its pid and start time (field 22 of
 * /proc/<pid>/stat) decide; from another host, a heartbeat it refreshes. Null in rows written
 * before these columns (judged ended).
 */
export const hostGenerations = sqliteTable(
  'host_generations',
  {
    generation: integer('generation').primaryKey({ autoIncrement: true }),
    /** The host that started it (hosts.id); null in rows written before hosts existed. */
    hostId: text('host_id'),
    pid: integer('pid').notNull(),
    startedAt: integer('started_at').notNull().default(now),
    startTicks: integer('start_ticks'),
    bootId: text('boot_id'),
    hostname: text('hostname'),
    /** /proc/self/ns/pid: two containers on one kernel share its boot id but not their pids. */
    pidNamespace: text('pid_namespace'),
    heartbeatAt: integer('heartbeat_at'),
    /** True from its claim until its sidecar answers HTTP: the host is not listed `up` before it
     * serves. False in rows written before the column (they served). */
    starting: integer('starting', { mode: 'boolean' }).notNull().default(false),
    /** When it was known to have ended: it stopped cleanly, refused to start, or a later sidecar
     * found it dead. */
    endedAt: integer('ended_at'),
  },
  (t) => [index('host_generations_host').on(t.hostId, t.generation)],
)

export const terminals = sqliteTable(
  'terminals',
  {
    sessionId: text('session_id').notNull(),
    id: text('id').notNull(),
    title: text('title').notNull(),
    shellPath: text('shell_path').notNull(),
    shellArgs: text('shell_args', { mode: 'json' }).$type<string[]>().notNull(),
    cwd: text('cwd').notNull(),
    cols: integer('cols').notNull(),
    rows: integer('rows').notNull(),
    state: text('state', { enum: TERMINAL_STATES }).notNull(),
    exitCode: integer('exit_code'),
    exitSignal: integer('exit_signal'),
    error: text('error'),
    hostGeneration: integer('host_generation').notNull(),
    createdAt: integer('created_at').notNull().default(now),
    updatedAt: integer('updated_at').notNull().default(now),
    exitedAt: integer('exited_at'),
    closedAt: integer('closed_at'),
    /** The name of the program in the PTY's foreground process group (tmux's
     * pane_current_command), recorded by the sidecar when it changes; null once it exited. */
    foregroundCommand: text('foreground_command'),
    /** A workflow run's sub-agent: the run and the member's seq (null for other terminals). */
    workflowRun: text('workflow_run'),
    workflowSeq: integer('workflow_seq'),
    /**
     * What finds the terminal's processes again after a crash of the sidecar that owned them,
     * without trusting a pid alone: the shell's pid (the id of the session every process of the
     * terminal is in), its start time (/proc/<pid>/stat field 22, clock ticks since boot) and the
     * boot (/proc/sys/kernel/random/boot_id). Null where /proc does not tell (not Linux) or the
     * spawn failed.
     */
    leaderPid: integer('leader_pid'),
    leaderStartTicks: integer('leader_start_ticks'),
    bootId: text('boot_id'),
    /** A name people type (`termkeep attach api:build`), unique within the session; null: none. */
    name: text('name'),
    /** Where the terminal's command marks come from (docs/commands.md): `injected` by termkeep's
     * shell integration, `detected` from a prompt that emits them itself, or `none` seen. */
    commandMarks: text('command_marks', { enum: COMMAND_MARKS }).notNull().default('none'),
  },
  (t) => [
    primaryKey({ columns: [t.sessionId, t.id] }),
    index('terminals_state').on(t.state, t.hostGeneration),
    index('terminals_workflow').on(t.workflowRun, t.workflowSeq),
    uniqueIndex('terminals_name').on(t.sessionId, t.name),
  ],
)

/**
 * One command a terminal's shell ran, derived by the sidecar from the command marks in the
 * terminal's journal (sidecar/commands/). `n` counts 1, 2, 3… per terminal. Its output is the Data
 * records after `start_sequence` through `end_sequence`, without the first `start_skip` bytes of
 * the first and cut after `end_length` bytes of the last: exactly the bytes between the marks.
 * `output_text` is those bytes as plain text, cut from the front to COMMAND_TEXT_MAX_BYTES
 * (`output_omitted` bytes before it), written when the command ended; the rows outlive the journal.
 */
export const terminalCommands = sqliteTable(
  'terminal_commands',
  {
    sessionId: text('session_id').notNull(),
    terminalId: text('terminal_id').notNull(),
    n: integer('n').notNull(),
    /** The command line as the shell reported it ('' when it did not). */
    command: text('command').notNull(),
    /** The working directory it started in (null: not reported). */
    cwd: text('cwd'),
    startSequence: integer('start_sequence').notNull(),
    startSkip: integer('start_skip').notNull(),
    endSequence: integer('end_sequence'),
    endLength: integer('end_length'),
    /** Null while running, and when the shell did not say (the terminal ended first). */
    exitCode: integer('exit_code'),
    startedAt: integer('started_at').notNull(),
    endedAt: integer('ended_at'),
    /** `injected` (the marks carried the terminal's nonce) or `detected` (a prompt's own marks). */
    marks: text('marks', { enum: ['injected', 'detected'] }).notNull(),
    outputBytes: integer('output_bytes'),
    outputText: text('output_text'),
    outputOmitted: integer('output_omitted'),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.terminalId, t.n] })],
)

/**
 * One settled, durable screen. The header row is written in the same transaction as its chunks
 * and the history rows it adds, so a reader that sees the header sees every part of it.
 *
 * Two formats (`format`): 1, the whole revision's `rows` events in display_chunks (older
 * deployments; still read); 2, incremental: display_chunks holds only the viewport and alternate
 * events (`head_chunks` of them), and the history is the rows [history_first, history_end) of
 * epoch `history_epoch` in display_history, shared with the terminal's other revisions of that
 * epoch. `chunk_count`, `encoded_bytes`, `history_rows` and `truncated` always describe the events
 * readDisplay streams.
 */
export const displayRevisions = sqliteTable(
  'display_revisions',
  {
    sessionId: text('session_id').notNull(),
    terminalId: text('terminal_id').notNull(),
    revision: integer('revision').notNull(),
    cols: integer('cols').notNull(),
    rows: integer('rows').notNull(),
    cursorRow: integer('cursor_row').notNull(),
    cursorCol: integer('cursor_col').notNull(),
    cursorVisible: integer('cursor_visible', { mode: 'boolean' }).notNull(),
    cursorStyle: text('cursor_style', { enum: ['block', 'underline', 'bar'] }).notNull(),
    cursorBlink: integer('cursor_blink', { mode: 'boolean' }).notNull(),
    title: text('title').notNull().default(''),
    alternateScreen: integer('alternate_screen', { mode: 'boolean' }).notNull(),
    /** Palette: defaults plus OSC-changed entries, as the `begin` event carries it. */
    palette: text('palette', { mode: 'json' }).notNull(),
    /** Input modes, as the `begin` event carries them. */
    inputModes: text('input_modes', { mode: 'json' }).notNull(),
    /** The output sequence the emulator had applied when this screen settled (0 for migrated). */
    sequence: integer('sequence').notNull(),
    viewportRows: integer('viewport_rows').notNull(),
    alternateRows: integer('alternate_rows').notNull(),
    historyRows: integer('history_rows').notNull(),
    truncated: integer('truncated', { mode: 'boolean' }).notNull(),
    /** Total encoded size of all chunks (≤ MAX_DISPLAY_BYTES). */
    encodedBytes: integer('encoded_bytes').notNull(),
    chunkCount: integer('chunk_count').notNull(),
    /** 'live' for settled emulator screens, 'migrated' for legacy text-only records. */
    origin: text('origin', { enum: ['live', 'migrated'] }).notNull(),
    createdAt: integer('created_at').notNull().default(now),
    /** 1 = every event in display_chunks; 2 = head events there, history in display_history. */
    format: integer('format').notNull().default(1),
    /** Format 2: the viewport and alternate events in display_chunks (chunks 0…head_chunks-1). */
    headChunks: integer('head_chunks'),
    /** Format 2: the history's epoch and its absolute rows [history_first, history_end). */
    historyEpoch: integer('history_epoch'),
    historyFirst: integer('history_first'),
    historyEnd: integer('history_end'),
    /** Emulator state no display carries (scroll region, saved cursor, charsets, tab stops, …),
     * for rebuilding a released emulator from this revision; null when it cannot be rebuilt from
     * it (then the journal is replayed from the start). Shape: sidecar/emulator/restore.ts. */
    restore: text('restore', { mode: 'json' }),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.terminalId, t.revision] })],
)

/**
 * Format-2 history: consecutive rows of one epoch, stored once and shared by every revision whose
 * [history_first, history_end) overlaps them. A row's content never changes within its epoch (a
 * resize or reset begins a new one), so a chunk is only ever replaced by a superset of itself (the
 * newest small chunk absorbing the next rows). Pruning removes chunks no kept revision overlaps.
 */
export const displayHistory = sqliteTable(
  'display_history',
  {
    sessionId: text('session_id').notNull(),
    terminalId: text('terminal_id').notNull(),
    epoch: integer('epoch').notNull(),
    firstRow: integer('first_row').notNull(),
    rowCount: integer('row_count').notNull(),
    /** `{"styles":[…],"rows":[…]}`, deflated (zlib format; DecompressionStream('deflate') reads it
     * on every runtime): rows oldest first, style ids into the chunk's own table (0 = default,
     * `styles[0]` is id 1). Log-like rows shrink ~5–10×. */
    body: bytes('body').notNull(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.terminalId, t.epoch, t.firstRow] })],
)

/** Encoded rows of a revision, split so each chunk is one readDisplay `rows` event (≤ 64 KiB). */
export const displayChunks = sqliteTable(
  'display_chunks',
  {
    sessionId: text('session_id').notNull(),
    terminalId: text('terminal_id').notNull(),
    revision: integer('revision').notNull(),
    chunk: integer('chunk').notNull(),
    /** The `rows` event payload (JSON text), ready to stream. */
    body: text('body').notNull(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.terminalId, t.revision, t.chunk] })],
)

/** The pre-display, text-only terminal records of older deployments (≤ 500 rows, ≤ 4 MiB). */
export const legacyTerminalRecords = sqliteTable(
  'legacy_terminal_records',
  {
    sessionId: text('session_id').notNull(),
    terminalId: text('terminal_id').notNull(),
    title: text('title').notNull().default(''),
    cols: integer('cols').notNull(),
    rows: integer('rows').notNull(),
    /** Plain text, rows joined by '\n'. */
    text: text('text').notNull(),
    cursorRow: integer('cursor_row'),
    cursorCol: integer('cursor_col'),
    updatedAt: integer('updated_at').notNull().default(now),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.terminalId] })],
)

/** One-time data migrations that already ran (name → when, what). */
export const dataMigrations = sqliteTable('data_migrations', {
  name: text('name').primaryKey(),
  appliedAt: integer('applied_at').notNull().default(now),
  detail: text('detail'),
})

// ── Workflows ───────────────────────────────────────────────────────────────

/**
 * One workflow run. The sidecar that runs it is its only writer; `status` moves forward only
 * (running → completed | error | cancelled, or → interrupted when a later sidecar generation finds
 * it still running). The result's parts are columns; `value` is the script's JSON return value.
 */
export const workflowRuns = sqliteTable(
  'workflow_runs',
  {
    id: text('id').primaryKey(),
    sessionId: text('session_id').notNull(),
    status: text('status', { enum: WORKFLOW_STATUSES }).notNull(),
    script: text('script').notNull(),
    /** The run's `input` as JSON text; null when none was given. */
    input: text('input'),
    concurrency: integer('concurrency').notNull(),
    /** The run's default agent profile, when the request named one. */
    profile: text('profile'),
    /** The run's time limits (null: started before runs had them). */
    wallTimeLimitMs: integer('wall_time_limit_ms'),
    cpuTimeLimitMs: integer('cpu_time_limit_ms'),
    /** The caller's token: the authority `readText()` is re-derived from on every call. */
    tokenId: text('token_id').notNull(),
    /** The start's Idempotency-Key, if it had one: unique per session and token, and kept as long
     * as the run, so a retried start finds the run its first attempt started. */
    idempotencyKey: text('idempotency_key'),
    hostGeneration: integer('host_generation').notNull(),
    /** The script process, by pid and start time (clock ticks since boot), so a sidecar that
     * finds it orphaned kills that process and never a reused pid. */
    pid: integer('pid'),
    pidStartTicks: integer('pid_start_ticks'),
    /** The last event's sequence. */
    lastSequence: integer('last_sequence').notNull().default(0),
    stopReason: text('stop_reason', { enum: ['completed', 'error', 'cancelled'] }),
    error: text('error'),
    /** Which limit ended the run, if one did. */
    stopLimit: text('stop_limit', { enum: RUN_LIMITS }),
    value: text('value'),
    agentsStarted: integer('agents_started'),
    cancelReason: text('cancel_reason'),
    createdAt: integer('created_at').notNull().default(now),
    updatedAt: integer('updated_at').notNull().default(now),
    endedAt: integer('ended_at'),
  },
  (t) => [
    index('workflow_runs_session').on(t.sessionId, t.createdAt),
    index('workflow_runs_status').on(t.status, t.hostGeneration),
    uniqueIndex('workflow_runs_idempotency_key').on(t.sessionId, t.tokenId, t.idempotencyKey),
  ],
)

/** A run's event log, in order: `sequence` (1, 2, 3…) is the SSE event id. */
export const workflowEvents = sqliteTable(
  'workflow_events',
  {
    runId: text('run_id')
      .notNull()
      .references(() => workflowRuns.id, { onDelete: 'cascade' }),
    sequence: integer('sequence').notNull(),
    type: text('type', { enum: WORKFLOW_EVENT_TYPES }).notNull(),
    /** agent-start / agent-end: the member's seq. */
    memberSeq: integer('member_seq'),
    /** agent-end: how the member ended. */
    outcome: text('outcome', { enum: AGENT_OUTCOMES }),
    /** The event's data exactly as the stream sends it (JSON text). */
    data: text('data').notNull(),
    createdAt: integer('created_at').notNull().default(now),
  },
  (t) => [primaryKey({ columns: [t.runId, t.sequence] }), index('workflow_events_member').on(t.runId, t.type, t.memberSeq)],
)

// ── Session resources ───────────────────────────────────────────────────────

export const attachments = sqliteTable(
  'attachments',
  {
    id: text('id').primaryKey(),
    sessionId: text('session_id').notNull(),
    name: text('name').notNull(),
    mediaType: text('media_type').notNull().default('text/plain'),
    content: blob('content', { mode: 'buffer' }).notNull(),
    bytes: integer('bytes').notNull(),
    createdAt: integer('created_at').notNull().default(now),
  },
  (t) => [index('attachments_session').on(t.sessionId)],
)

export const toolResults = sqliteTable(
  'tool_results',
  {
    id: text('id').primaryKey(),
    sessionId: text('session_id').notNull(),
    toolName: text('tool_name').notNull(),
    content: text('content').notNull(),
    bytes: integer('bytes').notNull(),
    createdAt: integer('created_at').notNull().default(now),
  },
  (t) => [index('tool_results_session').on(t.sessionId)],
)

/**
 * The bytes of a resource larger than RESOURCE_PART_BYTES, in order (`seq` from 0); its own row's
 * `content` is then empty. One statement per part, because the embedded driver writes a blob on
 * the event loop (a 32 MiB one held every request for 0.4 s).
 */
export const resourceParts = sqliteTable(
  'resource_parts',
  {
    resourceId: text('resource_id').notNull(),
    seq: integer('seq').notNull(),
    content: blob('content', { mode: 'buffer' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.resourceId, t.seq] })],
)

/** A resource whose parts are being written; its row is inserted (and this one deleted) only once
 * they all are. One left behind by a crash is swept, parts and all, after RESOURCE_UPLOAD_ABANDON_MS. */
export const resourceUploads = sqliteTable('resource_uploads', {
  resourceId: text('resource_id').primaryKey(),
  startedAt: integer('started_at').notNull(),
})

// ── Authority ───────────────────────────────────────────────────────────────

export const tokens = sqliteTable('tokens', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  secretHash: text('secret_hash').notNull().unique(),
  /** True: every session; false: only those in token_sessions. */
  allSessions: integer('all_sessions', { mode: 'boolean' }).notNull(),
  createdAt: integer('created_at').notNull().default(now),
  expiresAt: integer('expires_at'),
  revokedAt: integer('revoked_at'),
})

export const tokenGrants = sqliteTable(
  'token_grants',
  {
    tokenId: text('token_id')
      .notNull()
      .references(() => tokens.id, { onDelete: 'cascade' }),
    grant: text('grant').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tokenId, t.grant] })],
)

export const tokenSessions = sqliteTable(
  'token_sessions',
  {
    tokenId: text('token_id')
      .notNull()
      .references(() => tokens.id, { onDelete: 'cascade' }),
    sessionId: text('session_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tokenId, t.sessionId] })],
)

/** Environment variable names a token declared for terminal observation (`observeEnvironment`):
 * `processes/environment` and the environment-rooted resolvers answer only for these. */
export const tokenObserveEnv = sqliteTable(
  'token_observe_env',
  {
    tokenId: text('token_id')
      .notNull()
      .references(() => tokens.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tokenId, t.name] })],
)

/** Short-lived, single-use tickets for EventSource (which cannot send headers). */
export const streamTickets = sqliteTable(
  'stream_tickets',
  {
    secretHash: text('secret_hash').primaryKey(),
    tokenId: text('token_id')
      .notNull()
      .references(() => tokens.id, { onDelete: 'cascade' }),
    /** The one request path the ticket opens. */
    path: text('path').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
  },
  (t) => [index('stream_tickets_expiry').on(t.expiresAt)],
)
