/**
 * The public contract's limits: what a client can meet (geometry, pages, input, history, files,
 * observation, workflows, tokens) and what the processes must agree on, each with why it is what
 * it is. A process's own tuning lives beside it (api/, sidecar/, storage/, cli/ tuning.ts);
 * nothing else may hard-code a limit.
 */

const KiB = 1024
const MiB = 1024 * KiB

// ── Geometry ────────────────────────────────────────────────────────────────
/** Narrowest terminal: one column of text plus one for a wide character's tail. */
export const MIN_COLS = 2
/** Widest terminal: beyond this xterm reflow and the encoded rows get unreasonable. */
export const MAX_COLS = 1024
/** Shortest terminal: a single status line is still a terminal. */
export const MIN_ROWS = 1
/** Tallest terminal. */
export const MAX_ROWS = 1024
/** Visible cells cap: bounds the emulator's viewport memory and one screen's encoding. */
export const MAX_VISIBLE_CELLS = 65_536
/** Default geometry when a client offers none (the VT100 classic). */
export const DEFAULT_COLS = 80
export const DEFAULT_ROWS = 24

// ── Terminals ───────────────────────────────────────────────────────────────
/** Caller-chosen terminal and attachment ids: safe in URLs, file names and logs. */
export const TERMINAL_ID_PATTERN = /^[\w-]{1,128}$/
/** One input write: larger pastes are split by the client; a PTY cannot take more at once anyway. */
export const MAX_INPUT_BYTES = 64 * KiB
/** Input a terminal's program has not read yet (it waits in the sidecar, in order); more input is
 * refused (409 terminal/input-backlog-full) until the program reads. */
export const MAX_INPUT_BACKLOG_BYTES = 1 * MiB
/** An input batch's `Idempotency-Key` (visible ASCII): room for a UUID or a client's own
 * "<stream>-<counter>", short enough to keep hundreds per terminal in memory. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 128
/** Input keys a terminal remembers (per terminal, oldest forgotten first), and for how long: a
 * retry after a 503 comes within seconds or minutes, not after hundreds of later batches or an
 * hour. A key forgotten (or a sidecar restarted, which retires its terminals anyway) is new. */
export const INPUT_KEYS_REMEMBERED = 512
export const INPUT_KEY_MEMORY_MS = 10 * 60_000
/** How long a client keeps retrying one request whose outcome is unknown (a network failure, a
 * 503 from a stalled sidecar) before it gives up and tells the user: an input batch of the page,
 * `termkeep attach` or `send`, a `termkeep run` start. As long as attach waits for a lost server,
 * and far inside INPUT_KEY_MEMORY_MS, so the last retry still finds its key remembered. */
export const UNKNOWN_OUTCOME_RETRY_MS = 60_000
/** A terminal's `command` (`shell -c command`): a command line, not a script; a longer script
 * belongs in a file the command runs. */
export const MAX_COMMAND_CHARS = 16_384
/** Terminal titles after trimming (and at least one visible character). */
export const MAX_TITLE_CHARS = 120
/** Running terminals per session: creates in flight and terminals whose program still runs
 * (`starting`, `running`). A terminal whose program exited holds no process of its own and does
 * not count; its record, journal and screen stay readable until it is closed. */
export const MAX_TERMINALS_PER_SESSION = 16
/** Exited terminals a session keeps open for inspection (a `run_command` leaves one per call):
 * a create closes the oldest beyond this many that nobody follows or holds, so their journals on
 * disk stay bounded while an agent's recent results stay readable. Their records and screens
 * stay in the database. */
export const MAX_EXITED_TERMINALS_PER_SESSION = 64

// ── Commands (shell integration: docs/commands.md) ──────────────────────────
/** A command typed into an existing shell (POST …/commands) is one input write: at most the
 * input bound, in UTF-8 bytes. */
export const MAX_RUN_COMMAND_BYTES = MAX_INPUT_BYTES
/** How long a run waits for its command's end unless told otherwise, and at most: the call holds
 * one request that long (as MCP `wait` and `run` do). */
export const COMMAND_RUN_DEFAULT_TIMEOUT_MS = 30_000
export const COMMAND_RUN_MAX_TIMEOUT_MS = 10 * 60_000
/** A command's output as plain text (a run's answer, the text kept in its record): an agent's
 * context holds tens of kilobytes. More is cut from the front and counted; the journal keeps every
 * byte while the terminal lives. */
export const COMMAND_TEXT_MAX_BYTES = 64 * KiB
/** Command records kept per terminal (the oldest go first): with each record's text at most
 * COMMAND_TEXT_MAX_BYTES, a terminal's records stay within 64 MiB, a display revision's size. */
export const COMMANDS_KEPT_PER_TERMINAL = 1_000
/** A recorded command line is cut to this many characters (a pasted script can be megabytes). */
export const MAX_RECORDED_COMMAND_CHARS = 16_384
/** Records one page of `GET …/commands` holds (default and at most). */
export const COMMANDS_PAGE_DEFAULT = 50
export const COMMANDS_PAGE_MAX = 500

// ── Names (sessions and terminals; docs/api.md#names) ───────────────────────
/** A name people type (`termkeep attach api`): a letter first (an all-digit target is a position,
 * and a name never collides with a generated id's prefix by accident of form), then letters,
 * digits, `.`, `_`, `-`; no `:` (it separates session and terminal in a target). */
export const NAME_PATTERN = /^[A-Za-z][\w.-]{0,63}$/
export const MAX_NAME_CHARS = 64

// ── Search and scrollback ───────────────────────────────────────────────────
/** Matches one search answers (default and at most): lines, not a dump of the output. */
export const SEARCH_DEFAULT_MATCHES = 100
export const SEARCH_MAX_MATCHES = 1_000
/** Output bytes one search reads per terminal before it answers with a cursor to go on from: RE2
 * is linear, so this bounds a request's time (about a second here). */
export const SEARCH_MAX_SCAN_BYTES = 32 * MiB
/** A matching line is shown cut to this many characters around its match. */
export const SEARCH_LINE_MAX_CHARS = 512
/** History rows one scrollback read returns at most. */
export const SCROLLBACK_PAGE_MAX_ROWS = 2_000

/** UTF-16 units one grapheme of a title or name may take: a text longer than its grapheme limit
 * times this is refused before its graphemes are counted, because Intl.Segmenter is quadratic in
 * the length (a 200,000-character title blocked the API for 54 s). The longest emoji sequences
 * (a kiss with two skin tones) take 15 units, a letter with 30 combining marks (Unicode's
 * stream-safe bound, UAX #15) 31. */
export const MAX_UTF16_UNITS_PER_GRAPHEME = 32

// ── Output journal ──────────────────────────────────────────────────────────
/** A PTY read is split into native Data records of at most this many raw bytes, so one record
 * always fits the encoded item budget: 48,000 raw → 64,000 base64 chars, leaving 1,536 bytes for
 * the JSON envelope (48 KiB exactly would be 65,536 base64 chars and overflow it). */
export const MAX_RECORD_RAW_BYTES = 48_000
/** One delivered output item (JSON envelope with base64 payload) never exceeds this. */
export const MAX_OUTPUT_ITEM_BYTES = 64 * KiB
/** readOutput returns at most this many items per page; the next cursor continues. */
export const MAX_OUTPUT_PAGE_ITEMS = 256
/** Default page size for readOutput. */
export const DEFAULT_OUTPUT_PAGE_ITEMS = 64

/** Close: time between SIGHUP and SIGKILL for the terminal's processes. */
export const CLOSE_KILL_GRACE_MS = 500
/** Close: after the kill, how long to wait for EOF before the master is closed by force. */
export const CLOSE_DRAIN_MS = 3_000

// ── Display ─────────────────────────────────────────────────────────────────
/** History allowance in cells: floor(HISTORY_CELLS / cols) rows (10,000 at 80 columns). */
export const HISTORY_CELLS = 800_000
/** An encoded display revision never exceeds this; history that does not fit is truncated. */
export const MAX_DISPLAY_BYTES = 64 * MiB
/** One readDisplay `rows` event never exceeds this encoded. */
export const MAX_DISPLAY_EVENT_BYTES = 64 * KiB

// ── Plain screen projection (agents) ────────────────────────────────────────
/** History rows included under the viewport in the plain projection. */
export const SCREEN_HISTORY_ROWS = 200
/** Minimum interval between two screen/watch events for one subscriber. */
export const SCREEN_WATCH_INTERVAL_MS = 250

// ── Files ───────────────────────────────────────────────────────────────────
/** One text page or byte window. Larger pages are refused, never cut. */
export const MAX_FILE_PAGE_BYTES = 2 * MiB
/** Lines per text page (default and maximum). */
export const MAX_FILE_PAGE_LINES = 5_000
/** readAll cap: whole files beyond this are `too-large`. */
export const MAX_FILE_BYTES = 32 * MiB
/** The longest line a text page may skip on its way to its `offset`; a longer one is `too-large`
 * (read around it with a byte window). Lines of several MB (minified bundles, JSON logs) pass,
 * and a file of any size with newlines pages as before; a file without them (a disk image, a
 * sparse file) is refused after this many bytes instead of read to its end (100 GB outlasted the
 * API's SIDECAR_SLOW_CALL_TIMEOUT_MS and came back as a 503). Bytes, not time, so the answer is
 * the same on any disk; 64 MiB takes under a second even from a 100 MB/s disk. */
export const MAX_SKIPPED_LINE_BYTES = 64 * MiB
/** Directory listing entries; more are reported as `truncated`. */
export const MAX_LIST_ENTRIES = 2_000

// ── Terminal observation (agent providers) ─────────────────────────────────
/** Processes one `descendants` answer reports (a larger tree is cut, `truncated`). */
export const OBSERVE_MAX_PROCESSES = 256
/** Open files one `openFiles` answer reports. */
export const OBSERVE_MAX_OPEN_FILES = 128
/** Names in one `environment` request. */
export const OBSERVE_MAX_ENV_NAMES = 16
/** Environment variable names one token may declare (`observeEnvironment`). */
export const OBSERVE_MAX_DECLARED_ENV = 32
/** What an environment variable name may look like: upper case, as the seed's manifests declare
 * them; never a way to smuggle `=` or NUL into a lookup. */
export const OBSERVE_ENV_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,127}$/
/** A value longer than this is left out of an `environment` answer (a bounded fact, not a dump). */
export const OBSERVE_MAX_ENV_VALUE_BYTES = 32 * KiB
/** Arguments reported per process, and characters per argument. */
export const OBSERVE_MAX_ARGUMENTS = 64
export const OBSERVE_MAX_ARGUMENT_CHARS = 4_096
/** Directory listing options (the seed's host caps): extensions per listing and their length,
 * depth below the root, entries, and the summed size of the listed files. */
export const OBSERVE_MAX_EXTENSIONS = 16
export const OBSERVE_MAX_EXTENSION_CHARS = 64
export const OBSERVE_MAX_LIST_DEPTH = 8
export const OBSERVE_MAX_LIST_ENTRIES = 256
export const OBSERVE_MAX_LIST_BYTES = 16 * MiB
/** One `read` / `readJson` / `readJsonLine` (the seed's host cap). */
export const OBSERVE_MAX_READ_BYTES = 4 * MiB
/** One `follow` chunk: the host lowers a larger `maxChunkBytes` to this (one SSE event stays
 * under ~90 KB with its base64). */
export const OBSERVE_MAX_FOLLOW_CHUNK_BYTES = 64 * KiB
/** An opaque handle's id on the wire (it carries an encrypted canonical path of ≤ 4,096 chars). */
export const OBSERVE_MAX_HANDLE_CHARS = 8_192

/** `watchDirectory` and `follow` streams open at once on one terminal. */
export const OBSERVE_MAX_WATCHERS_PER_TERMINAL = 32

// ── Registry ────────────────────────────────────────────────────────────────
/** Workspace titles after trimming. */
export const MAX_WORKSPACE_TITLE_CHARS = 200
/** Filesystem paths accepted on the wire. */
export const MAX_PATH_CHARS = 4_096
/** Session ids (caller-chosen or generated). */
export const SESSION_ID_PATTERN = /^[\w-]{1,128}$/
/** Sessions in one page of `GET /v1/sessions` (and the default): a page stays a small answer
 * however many sessions accumulated; a client pages on with `cursor`. */
export const MAX_SESSION_PAGE = 500
/** Registry events kept for watch resumption; older ones are pruned, and a watch resuming from
 * before them gets a fresh baseline instead of increments. */
export const REGISTRY_EVENTS_KEPT = 10_000

// ── Hosts ───────────────────────────────────────────────────────────────────
/** Host ids (generated once per data directory) and the selector `host` accepts: an id or a name. */
export const HOST_ID_PATTERN = /^[\w-]{1,128}$/
/** Host names (TERMKEEP_HOST, default the hostname): a DNS label's characters and length, so any
 * hostname fits. */
export const HOST_NAME_PATTERN = /^[\w.-]{1,63}$/
/** How often a sidecar refreshes its generation's heartbeat: what tells the API (and a sidecar
 * on another machine) that its host is up. */
export const HOST_HEARTBEAT_MS = 10_000
/** A host whose newest heartbeat is older than this is down (three missed beats: a busy database
 * or a slow disk is not a death). Clocks are trusted to within it. */
export const HOST_LEASE_MS = 3 * HOST_HEARTBEAT_MS

// ── Tokens ──────────────────────────────────────────────────────────────────
/** Sessions one token may name; more is a sign of a token that should be `all`. */
export const MAX_TOKEN_SESSIONS = 1_000
/** A token's name (graphemes): it is listed by `GET /v1/tokens` and `termkeep token list`. */
export const MAX_TOKEN_NAME_CHARS = 100

// ── Workflows ───────────────────────────────────────────────────────────────
/** A run's script. Model-written orchestration is a few KB; this leaves room for embedded data
 * while the parse check before publication and the message to the script process stay small. */
export const MAX_WORKFLOW_SCRIPT_BYTES = 256 * KiB
/** A run's `input`, serialized as JSON (with the script it must fit one JSON request body). */
export const MAX_WORKFLOW_INPUT_BYTES = 512 * KiB
/** The script's return value, serialized as JSON: it is stored with the run and sent whole. */
export const MAX_WORKFLOW_RESULT_BYTES = 1 * MiB
/** Arrays and objects nested in the return value. V8's JSON.stringify, which stores it, throws
 * past about 4,000 levels; no result a person reads nests this deep. */
export const MAX_WORKFLOW_RESULT_DEPTH = 200
/** A failed run's `error` (its description of what the script threw, or why the run ended),
 * stored with the run and sent whole like the result: longer text is cut, and says so. */
export const MAX_WORKFLOW_ERROR_BYTES = 16 * KiB
/** `agent()` calls one run may make (queued ones included): the seed engine's maxTotalAgents. */
export const MAX_AGENTS_PER_RUN = 1000
/** Sub-agents running at once in one run. Each is a live terminal, and a session holds at most
 * MAX_TERMINALS_PER_SESSION, so half of them stays free for people and other runs. */
export const MAX_WORKFLOW_CONCURRENCY = 8
/** Concurrency when a run names none. */
export const DEFAULT_WORKFLOW_CONCURRENCY = 4
/** Items one `parallel()` or `pipeline()` call takes: the seed engine's maxItemsPerCall. */
export const MAX_WORKFLOW_ITEMS = 4096
/** Runs whose script process is alive at once, per sidecar: each is a Node process (~40 MB). */
export const MAX_RUNNING_WORKFLOWS = 8
/** Runs alive at once per session, and per token (across its sessions): one session, or one
 * token, holds at most half of MAX_RUNNING_WORKFLOWS, so it cannot take every place. */
export const MAX_RUNNING_WORKFLOWS_PER_SESSION = 4
export const MAX_RUNNING_WORKFLOWS_PER_TOKEN = 4
/** A run's wall-clock time, from its start to its end, its agents' time included: the default
 * and the most a start's `limits.wallTimeMs` may ask. An hour covers a fan-out of agents that
 * each take minutes; a run that never returns ends instead of holding its place for ever. */
export const DEFAULT_WORKFLOW_WALL_TIME_MS = 60 * 60_000
export const MAX_WORKFLOW_WALL_TIME_MS = 24 * 60 * 60_000
/** The script's own CPU time (its process's, with the sidecar's time serving its readText() calls;
 * agents run in terminals and are not counted): the default and the most `limits.cpuTimeMs` may
 * ask. A script orchestrates, it waits on agents far more than it computes: a minute of CPU is a
 * lot of orchestration. */
export const DEFAULT_WORKFLOW_CPU_TIME_MS = 60_000
export const MAX_WORKFLOW_CPU_TIME_MS = 10 * 60_000
/** The least either time limit may be set to. */
export const MIN_WORKFLOW_TIME_LIMIT_MS = 100
/** The script engine's whole memory (QuickJS's WebAssembly memory, which cannot grow past it):
 * the engine itself (about 2 MiB), the script's code and everything it allocates. An allocation
 * past it throws `InternalError: out of memory` in the script, and a run that ends with it ends
 * with `limit: 'memory'`. */
export const WORKFLOW_SCRIPT_MEMORY_BYTES = 64 * MiB
/** The script's stack in its engine: a recursion deeper than it throws `InternalError: stack
 * overflow` in the script (measured: 1,361 nested calls of a small function, 680 of an async
 * one). The engine's frames run on the script process's native stack too, and beyond about
 * 300 KiB a deep recursion overflowed that first. */
export const WORKFLOW_SCRIPT_STACK_BYTES = 256 * KiB
/** The script process's own V8 heap (the host side that relays messages; the script's memory is
 * WORKFLOW_SCRIPT_MEMORY_BYTES, in WebAssembly memory): a bound for escaped code, not for scripts. */
export const WORKFLOW_SCRIPT_HEAP_MB = 256
/** An agent result's `text` (its result file, else its rendered output): one agent's answer, not
 * a data channel. Longer text is cut and the result says `truncated`. */
export const MAX_AGENT_TEXT_BYTES = 1 * MiB
/** One agent prompt. The kernel takes at most 128 KiB per argv string or environment entry
 * (MAX_ARG_STRLEN), which is how `argument` and `env` prompts travel. */
export const MAX_AGENT_PROMPT_BYTES = 100_000
/** A `stdin` prompt is typed into the agent's terminal, whose line discipline (canonical mode)
 * keeps at most 4,095 bytes of one line (N_TTY_BUF_SIZE); a longer line would be cut silently. */
export const MAX_AGENT_STDIN_LINE_BYTES = 4095
/** An agent's label (its terminal's title) after trimming; the default label is the prompt's first
 * line cut at AGENT_LABEL_DEFAULT_CHARS (the seed engine's 48). */
export const MAX_AGENT_LABEL_CHARS = MAX_TITLE_CHARS
export const AGENT_LABEL_DEFAULT_CHARS = 48
/** `log()`: one message, and a whole run's messages (bytes and count). Every message is an event
 * stored in libSQL and streamed to every watcher; beyond these the run fails (a limit exceeded). */
export const MAX_WORKFLOW_LOG_MESSAGE_BYTES = 16 * KiB
export const MAX_WORKFLOW_LOG_BYTES = 1 * MiB
export const MAX_WORKFLOW_LOG_MESSAGES = 10_000
/** A cancel's reason, recorded with the run. */
export const MAX_CANCEL_REASON_CHARS = 500
/** Agent profiles in TERMKEEP_AGENTS, and the file's size when it names one. */
export const MAX_AGENT_PROFILES = 64
export const MAX_AGENT_PROFILES_FILE_BYTES = 1 * MiB
/** Runs listed per page (default and maximum). */
export const DEFAULT_WORKFLOW_RUNS_PAGE = 50
export const MAX_WORKFLOW_RUNS_PAGE = 200

// ── Session resources ───────────────────────────────────────────────────────
/** One stored attachment or archived tool result. */
export const MAX_RESOURCE_BYTES = 32 * MiB
/** An attachment's name or a tool result's tool name (graphemes). */
export const MAX_RESOURCE_NAME_CHARS = 255

// ── HTTP ────────────────────────────────────────────────────────────────────
/** SSE comment heartbeat, so proxies and clients see a live stream. */
export const SSE_HEARTBEAT_MS = 15_000
/** The controlling follow's stream is never quiet longer than this: a closed client is found by
 * the next write failing, on every runtime (Workers notices no disconnect otherwise), so input
 * control is free again within about this long after the controller's client left. */
export const CONTROL_RENEW_MS = 1_000
/** Connections a listening socket (the API's, the sidecar's) queues before it accepts them, up to
 * the kernel's somaxconn. Node's default, 511, overflowed under a burst of streams: the SYNs it
 * dropped were retried a second later, which the API's 2 s connect budget to the sidecar often
 * did not survive. */
export const LISTEN_BACKLOG = 4096
/** JSON request bodies (raw input has its own limit). */
export const MAX_JSON_BODY_BYTES = 1 * MiB
/** Nesting of a JSON request body (arrays and objects). Every request schema is 2–3 deep; V8
 * parses a 40 MB `[[[[…` in ~10 s and ~2 GB while the API serves nobody. */
export const MAX_JSON_DEPTH = 32
/** The latest accepted timestamp (epoch ms; 9999-12-31T23:59:59.999Z): a token's `expiresAt`
 * stays an exact integer in JavaScript and in SQLite. */
export const MAX_TIMESTAMP_MS = 253_402_300_799_999
/** EventSource tickets live this long and open exactly one stream. */
export const TICKET_TTL_MS = 60_000

// ── MCP (api/mcp/) ──────────────────────────────────────────────────────────
/** A `wait` pattern: a short RE2 regex (compiling costs time and memory in its length). */
export const MCP_PATTERN_MAX_CHARS = 1_024
/** The screen text a pattern is matched against: its last this many characters (the projection's
 * history tail and viewport rarely reach it). RE2 runs in time linear in the text, so a pattern
 * can cost at most one pass over this per screen change; a backtracking engine could hang. */
export const MCP_PATTERN_TEXT_MAX_CHARS = 256 * KiB
/** `wait` and `run` give up after this long unless told otherwise, and are never told more than
 * the max: a tool call holds one request (and, for `run`, input control) that long. */
export const MCP_WAIT_DEFAULT_MS = 30_000
export const MCP_WAIT_MAX_MS = 10 * 60_000
/** Output text one tool result carries (`run`'s output, an output page as text): an agent's
 * context holds tens of kilobytes, not megabytes. More is cut from the front and said so; the
 * journal keeps every byte for `read_output`. */
export const MCP_TEXT_MAX_BYTES = 64 * KiB
/** A stream read (`workflow_events`, …) answers once no event came for `quietMs` (default; at
 * most the max: the call holds one request and stream that long waiting for the next event). */
export const MCP_STREAM_QUIET_DEFAULT_MS = 1_000
export const MCP_STREAM_QUIET_MAX_MS = 60_000
/** Events one stream read returns (default and at most): an agent pages on with the cursor. */
export const MCP_STREAM_DEFAULT_EVENTS = 200
export const MCP_STREAM_MAX_EVENTS = 1_000
/** Terminals `resources/list` names at most (a resource per live terminal screen). */
export const MCP_MAX_LISTED_RESOURCES = 256

// ── Storage ─────────────────────────────────────────────────────────────────
/** Health writes a probe row at most this often per process (storage/health.ts); its result
 * stands in between: a write on every health call would be a write per load-balancer ping. */
export const DB_WRITE_PROBE_MS = 5_000
/** The sidecar's own database connection for health's write probe never waits for a lock (busy
 * timeout 0: a probe waiting DB_BUSY_TIMEOUT_MS would block the sidecar's main thread that long).
 * A lock another connection holds this long is no longer one of termkeep's own writes (they last
 * milliseconds) but a stuck one (a `sqlite3` shell left in a transaction, a backup): every
 * termkeep write meanwhile waits on its thread, then fails, so health says `database/locked`. */
export const DB_LOCK_DEGRADED_MS = 2_000
/** Below this much free space on the data directory's or the database's file system, health says
 * `storage/low-space` before writes fail: a journal flush and a display revision are up to a few
 * MiB each, and SQLite needs room for its WAL to grow and be checkpointed. The sidecar's
 * TERMKEEP_DISK_FREE_MIN_BYTES overrides it. */
export const DISK_FREE_MIN_BYTES = 64 * MiB
