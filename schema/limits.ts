/**
 * Every limit termkeep enforces, in one place. Each one says why it is what it is.
 * Both processes and every runtime import these; nothing else may hard-code a limit.
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
/** How long `termkeep attach`, `new`, `output --follow` and `run` keep trying to reach a server
 * they lost before they give up (`--reconnect-timeout`): long enough for a server restart or a
 * network blip; past it, a user at a frozen screen is better served by a message and a prompt. */
export const CLI_RECONNECT_GIVE_UP_MS = 60_000
/** Input `termkeep attach` holds while its control is being confirmed; a paste beyond it is cut
 * (and reported). */
export const CLI_MAX_HELD_INPUT_BYTES = 64 * 1024
/** The wait before the first such retry, doubling up to the max: quick after a blip, while a
 * server that stays away is asked once every few seconds, not hammered. */
export const RETRY_FIRST_DELAY_MS = 250
export const RETRY_MAX_DELAY_MS = 4_000
/** A terminal's `command` (`shell -c command`): a command line, not a script; a longer script
 * belongs in a file the command runs. */
export const MAX_COMMAND_CHARS = 16_384
/** Terminal titles after trimming (and at least one visible character). */
export const MAX_TITLE_CHARS = 120
/** Live (not yet closed) terminals per session, counting pending and failed creates. */
export const MAX_TERMINALS_PER_SESSION = 16

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
/** Encoded watchOutput batches (~1.4 MB each) one terminal keeps for its other watchers at the
 * same cursor (sidecar/journal/shared-batches.ts): enough for watchers a few batches apart to
 * share every batch, small beside the copies it saves (200 watchers had each made their own). */
export const WATCH_SHARED_BATCHES_BYTES = 8 * MiB
/** Bytes one emulator may have been sent but not yet applied: bounds the feed's memory while
 * the emulator (≈4× slower than a PTY) lags behind a flood; the journal holds the rest. */
export const EMULATOR_MAX_INFLIGHT_BYTES = 1 * MiB
/** Emulator worker threads per sidecar; terminals share them (each boot costs ~0.5 s of CPU). */
export const EMULATOR_WORKERS = 2
/** A screen whose emulator worker failed is rebuilt from its journal in another worker at most
 * this many times (output that crashes the emulator itself must not loop forever). */
export const EMULATOR_MAX_REBUILDS = 3
/** A terminal whose output has been quiet this long, with no follower or screen watcher, and whose
 * newest revision holds its whole screen, gives its emulator back (memory); the emulator is
 * rebuilt from that revision and the journal after it when output, a follow or a screen read
 * needs it. */
export const EMULATOR_RELEASE_IDLE_MS = 30_000
/** After a screen leaves an emulator worker (released or closed), the worker collects its heap once
 * this long after the last such close (a batch of releases costs one collection): an idle worker
 * otherwise keeps a released 10,000-row screen (~13 MiB of rows) allocated until some later
 * output happens to trigger a major GC. */
export const EMULATOR_COLLECT_AFTER_CLOSE_MS = 1_000
/** Journal bytes an emulator feed reads ahead (one batch) when it lags, so the worker can skip
 * plain text that provably scrolls out of the history allowance instead of parsing it
 * (sidecar/display/fast-forward.ts). Larger skips more of a flood (16 MiB skipped ~95% of a
 * 200 MB cat) but costs resident memory in copies and garbage (+107 MiB peak at 16 MiB against
 * +36 MiB at 1 MiB while 100 MB streamed): 1 MiB keeps a flood's memory flat. */
export const EMULATOR_FAST_FORWARD_WINDOW_BYTES = 1 * MiB
/**
 * Bytes the PTY thread may have read and handed to the main thread that the journal has not
 * confirmed yet. Above this it stops reading the PTY (the program blocks on its next write, as
 * under tmux or a paused terminal) until the journal catches up to half of it: a stalled main
 * thread (a long GC, a slow disk) can never make a flood pile up in memory between the threads.
 */
export const PTY_UNJOURNALED_MAX_BYTES = 8 * MiB

/** Bytes of an unfinished plain-text stretch the fast-forward planner may hold back from one
 * window to the next, so a flood arriving in small windows is skipped as if read in one piece
 * (~6,700 lines at 120 columns need ~0.6 MB of typical text); a longer stretch is written out. */
export const EMULATOR_FAST_FORWARD_HOLD_BYTES = 2 * MiB
/** Close: time between SIGHUP and SIGKILL for the terminal's processes. */
export const CLOSE_KILL_GRACE_MS = 500
/** Sidecar shutdown: how long the PTY thread waits for its killed processes' exits before it is
 * terminated (terminating it while node-pty reports an exit crashes the process). */
export const PTY_EXIT_WAIT_MS = 2000
/** Close: after the kill, how long to wait for EOF before the master is closed by force. */
export const CLOSE_DRAIN_MS = 3_000
/** A failed close cleanup is retried after this long. */
export const CLOSE_RETRY_MS = 60_000
/** A terminal nobody holds, follows or types into, and whose program printed nothing, is
 * reclaimed (closed) after this long idle. Output counts: a build left running unwatched for
 * hours is not idle, and is not killed. */
export const TERMINAL_IDLE_RECLAIM_MS = 2 * 60 * 60_000

// ── Display ─────────────────────────────────────────────────────────────────
/** History allowance in cells: floor(HISTORY_CELLS / cols) rows (10,000 at 80 columns). */
export const HISTORY_CELLS = 800_000
/** An encoded display revision never exceeds this; history that does not fit is truncated. */
export const MAX_DISPLAY_BYTES = 64 * MiB
/** One readDisplay `rows` event never exceeds this encoded. */
export const MAX_DISPLAY_EVENT_BYTES = 64 * KiB
/** Quiet time after output before the screen counts as settled and is persisted. */
export const SETTLE_WINDOW_MS = 250
/** A screen that never goes quiet (a progress bar, a clock, a log) is still settled this long
 * after its first unsettled change. With the emulator's own lag (≤ ~2 s measured in a 3-terminal
 * flood on 2 cores, bench display-scale) and the write, the newest revision then covers the
 * journal up to at most 5 s ago at any moment (docs/display.md): what a crash can lose. */
export const SETTLE_MAX_WAIT_MS = 2_000
/** Display revisions kept per terminal besides the newest, and how long an older one survives
 * pruning at least: a readDisplay that began on it can finish streaming. Its own part is the
 * viewport (read first, within milliseconds); its history rows are shared with the revisions
 * after it, so they outlive it anyway until they scroll out of every kept revision. (It was 2
 * minutes while every revision held its whole history: a busy terminal then kept ~100 revisions.) */
export const DISPLAY_KEEP_REVISIONS = 3
export const DISPLAY_KEEP_MS = 15_000
/** How often the sidecar sweeps the revisions of terminals that write no more. */
export const DISPLAY_PRUNE_SWEEP_MS = 2 * 60_000
/** Stored history rows are grouped into chunks of at most this much JSON: large enough that a
 * 10,000-row history is a few dozen database rows, small enough to page through. */
export const DISPLAY_HISTORY_CHUNK_BYTES = 32 * KiB
/** The newest history chunk below this size absorbs the next revision's new rows (rewritten
 * whole), so a shell that adds a line per revision does not leave a chunk per line; the rewrite
 * is bounded by this per revision. */
export const DISPLAY_HISTORY_MERGE_BYTES = 4 * KiB
/** When a terminal's emulator closes, its last settle waits at most this long for the emulator
 * to catch up with the journal (a shutdown must not hang on a large backlog). */
export const DISPLAY_DRAIN_MS = 5_000
/** A write of the sidecar's that failed (a display revision, a terminal's state, title or exit)
 * is tried again after this, doubling up to the max, until it lands. */
export const PERSIST_RETRY_MS = 1_000
export const PERSIST_RETRY_MAX_MS = 30_000
/** `termkeep serve` waits this long for its sidecar's shutdown (last screens, processes, rows)
 * before it kills it and exits. */
export const SIDECAR_STOP_GRACE_MS = 15_000
/** `termkeep serve` starts a crashed sidecar again after this long, doubling per crash up to the
 * max (a sidecar that cannot start must not spin), and from the start again once one stayed up a
 * healthy minute. Meanwhile live routes answer 503 and everything stored is served. */
export const SIDECAR_RESTART_MIN_MS = 1_000
export const SIDECAR_RESTART_MAX_MS = 30_000
export const SIDECAR_HEALTHY_RESET_MS = 60_000
/** How often a sidecar refreshes its generation's heartbeat in the database: what tells a sidecar
 * on another host that it still runs (on the same host its pid and start time tell at once). */
export const GENERATION_HEARTBEAT_MS = 10_000
/** A generation on another host whose heartbeat is younger than this is taken to be alive (three
 * missed beats: a busy database or a slow disk is not a death). */
export const GENERATION_LEASE_MS = 3 * GENERATION_HEARTBEAT_MS

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
/** Changes queued for one slow `files/changes` subscriber before it is disconnected. */
export const MAX_FILE_CHANGES_QUEUED = 10_000
/** Directories the OS watcher of one workspace watches (one inotify watch each), shallowest first. */
export const MAX_WATCHED_DIRECTORIES = 8_192
/** Entries of the data directory looked through for a hard link of one of its files (a regular
 * file with several links on its device); past this, every such file there counts as termkeep's. */
export const OWN_STATE_MAX_SCANNED = 20_000

// ── Terminal observation (agent providers) ─────────────────────────────────
/** Processes one `descendants` answer reports (a larger tree is cut, `truncated`). */
export const OBSERVE_MAX_PROCESSES = 256
/** Open files one `openFiles` answer reports. */
export const OBSERVE_MAX_OPEN_FILES = 128
/** Descriptors looked at per process for `openFiles`: a server holding 100,000 sockets must not
 * make one request read 100,000 links. */
export const OBSERVE_MAX_DESCRIPTORS_PER_PROCESS = 4_096
/** Names in one `environment` request. */
export const OBSERVE_MAX_ENV_NAMES = 16
/** Environment variable names one token may declare (`observeEnvironment`). */
export const OBSERVE_MAX_DECLARED_ENV = 32
/** What an environment variable name may look like: upper case, as the seed's manifests declare
 * them; never a way to smuggle `=` or NUL into a lookup. */
export const OBSERVE_ENV_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,127}$/
/** A value longer than this is left out of an `environment` answer (a bounded fact, not a dump). */
export const OBSERVE_MAX_ENV_VALUE_BYTES = 32 * KiB
/** How much of /proc/<pid>/environ and /proc/<pid>/cmdline is read (the kernel's ARG_MAX-ish
 * bound for both together is 2 MiB; a process that exceeds this loses the tail, not the call). */
export const OBSERVE_MAX_PROC_TEXT_BYTES = 2 * MiB
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
/** Directory entries one listing looks at in all: a root over a huge tree answers `truncated`
 * after this many instead of walking it for seconds. */
export const OBSERVE_MAX_LIST_SCANNED = 20_000
/** One `read` / `readJson` / `readJsonLine` (the seed's host cap). */
export const OBSERVE_MAX_READ_BYTES = 4 * MiB
/** One `follow` chunk: the host lowers a larger `maxChunkBytes` to this (one SSE event stays
 * under ~90 KB with its base64). */
export const OBSERVE_MAX_FOLLOW_CHUNK_BYTES = 64 * KiB
/** `watchDirectory` and `follow` streams open at once on one terminal. */
export const OBSERVE_MAX_WATCHERS_PER_TERMINAL = 32
/** Directory changes within this long make one new `watchDirectory` snapshot, not one each. */
export const OBSERVE_WATCH_SETTLE_MS = 50
/** Directories one `watchDirectory` watches (one inotify watch each; every change re-walks them
 * all): an agent's journal tree is tens of directories, not a whole home's thousands. */
export const OBSERVE_MAX_WATCHED_DIRECTORIES = 512
/** A /proc read (a whole tree's stat, cmdline and cwd: milliseconds) that has not answered in
 * this long is stuck on a process's memory; the request is 503 and the next gets a fresh thread. */
export const OBSERVE_PROC_TIMEOUT_MS = 5_000
/** The /proc thread ends after this long without a request (a sidecar nobody observes does not
 * carry its ~35 MB); the next request starts it again in a few hundred ms. */
export const OBSERVE_PROC_IDLE_MS = 60_000
/** An opaque handle's id on the wire (it carries an encrypted canonical path of ≤ 4,096 chars). */
export const OBSERVE_MAX_HANDLE_CHARS = 8_192
/** After output or input, the terminal's foreground program is looked at again this soon (a
 * command the shell just started has its process group by then); at most once per this long. */
export const FOREGROUND_CHECK_DELAY_MS = 150
/** And this often regardless, for a program that changes without a byte of I/O (a script that
 * starts `sleep`): two /proc reads per live terminal. */
export const FOREGROUND_POLL_MS = 2_000

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
/** How often a registry watch polls the event log for other API instances' mutations. */
export const REGISTRY_POLL_MS = 250
/** Registry events kept for watch resumption; older ones are pruned, and a watch resuming from
 * before them gets a fresh baseline instead of increments. */
export const REGISTRY_EVENTS_KEPT = 10_000

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
/** The script's own CPU time (its process's; agents run in terminals and are not counted): the
 * default and the most `limits.cpuTimeMs` may ask. A script orchestrates, it waits on agents far
 * more than it computes: a minute of CPU is a lot of orchestration. */
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
 * overflow` in the script (about 400 nested calls). The engine's frames run on the script
 * process's native stack too, and beyond about 300 KiB a deep recursion overflowed that first. */
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
/** Sub-agent terminals start at this size: wide enough that an agent's plain output is rarely
 * wrapped in its rendered text; a person attaching resizes it to their window. */
export const AGENT_COLS = 120
export const AGENT_ROWS = 40
/** `log()`: one message, and a whole run's messages (bytes and count). Every message is an event
 * stored in libSQL and streamed to every watcher; beyond these the run fails (a limit exceeded). */
export const MAX_WORKFLOW_LOG_MESSAGE_BYTES = 16 * KiB
export const MAX_WORKFLOW_LOG_BYTES = 1 * MiB
export const MAX_WORKFLOW_LOG_MESSAGES = 10_000
/** `readText()` calls of one run served at once; later ones wait their turn (a page is 2 MiB). */
export const WORKFLOW_READS_IN_FLIGHT = 2
/** A cancel's reason, recorded with the run. */
export const MAX_CANCEL_REASON_CHARS = 500
/** Agent profiles in TERMKEEP_AGENTS, and the file's size when it names one. */
export const MAX_AGENT_PROFILES = 64
export const MAX_AGENT_PROFILES_FILE_BYTES = 1 * MiB
/** How often an events stream polls the run's log in libSQL (the sidecar writes it; any API
 * instance may serve the stream). */
export const WORKFLOW_EVENTS_POLL_MS = 200
/** Runs listed per page (default and maximum). */
export const DEFAULT_WORKFLOW_RUNS_PAGE = 50
export const MAX_WORKFLOW_RUNS_PAGE = 200
/** Bytes of a script process's stderr kept to explain its unexpected exit (an out-of-memory death). */
export const WORKFLOW_STDERR_TAIL_BYTES = 4 * KiB
/** The one probe at sidecar start of whether script processes can start in new namespaces: a
 * Node start takes well under a second; a hung unshare must not hold the sidecar's start. */
export const WORKFLOW_SANDBOX_PROBE_MS = 10_000

// ── Session resources ───────────────────────────────────────────────────────
/** One stored attachment or archived tool result. */
export const MAX_RESOURCE_BYTES = 32 * MiB
/** Characters of a resource's wire text (base64 or UTF-8), or bytes of a large JSON body, the API
 * converts at once before it yields to its event loop: a few milliseconds each, where a whole
 * 32 MiB attachment held every other request for seconds. */
export const CONTENT_SLICE_SIZE = 1 * MiB
/** A stored resource larger than this is written as parts of this size, one statement each with
 * a yield between: the embedded database driver writes a blob on the event loop (~10 ms/MiB). */
export const RESOURCE_PART_BYTES = 1 * MiB
/** A resource's parts still unfinished after this long belong to a store a crash cut short
 * (a store takes seconds); the next store deletes them. */
export const RESOURCE_UPLOAD_ABANDON_MS = 60 * 60_000
/** An attachment's name or a tool result's tool name (graphemes). */
export const MAX_RESOURCE_NAME_CHARS = 255

// ── HTTP ────────────────────────────────────────────────────────────────────
/** SSE comment heartbeat, so proxies and clients see a live stream. */
export const SSE_HEARTBEAT_MS = 15_000
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
/** Margin for the sidecar to answer once its work is done (part of close's budget below). */
export const SIDECAR_CONNECT_TIMEOUT_MS = 2_000
/** How long a sidecar call may wait for its answer's headers while the sidecar is alive (its health
 * answers, see SIDECAR_LIVENESS_PROBE_MS): create spawns a shell, follow waits for the emulator's
 * snapshot, streams replay before their first event, and any call may wait behind the work of
 * hundreds of streams on a loaded host, which is busy, not unreachable. Close has its own budget:
 * kill grace + drain + the margin above. */
export const SIDECAR_SLOW_CALL_TIMEOUT_MS = 15_000
/** The latest accepted timestamp (epoch ms; 9999-12-31T23:59:59.999Z): a token's `expiresAt`
 * stays an exact integer in JavaScript and in SQLite. */
export const MAX_TIMESTAMP_MS = 253_402_300_799_999
/** A sidecar call with no answer after this long (and again every as long) asks whether the
 * sidecar is alive at all: its health, or any answer it gave within this long. Liveness is never
 * judged by the call's own answer, which may be queued behind stream work there. */
export const SIDECAR_LIVENESS_PROBE_MS = 1_000
/** The liveness answer's budget: a sidecar whose health does not answer within this is taken for
 * hung, and the calls waiting for it are 503 (a dead one refuses the connection at once). Its
 * health answers within one event-loop turn; 5 s is what a host starved of CPU (load 8 on 2
 * cores) still met, where 2 s was sometimes missed. */
export const SIDECAR_LIVENESS_TIMEOUT_MS = 5_000
/** One liveness probe's verdict is shared by every call that asks while it is out, and a "not
 * alive" verdict stands this long after it (an "alive" one stands SIDECAR_LIVENESS_PROBE_MS, as
 * any answer does): N calls waiting on a busy sidecar send it one health request, not N. */
export const SIDECAR_LIVENESS_VERDICT_MS = 1_000
/** The sidecar keeps an idle kept-alive connection of the API's open this long (Node's default is
 * 5 s). A sidecar that resumes after a stall runs its due timers before it reads its sockets, so
 * a request that arrived on an idle connection during a stall longer than this is dropped unread;
 * longer than a call's whole budget (SIDECAR_SLOW_CALL_TIMEOUT_MS), every request the API sent is
 * carried out once the sidecar resumes, as a 503's "unknown" outcome says it may be. */
export const SIDECAR_KEEP_ALIVE_MS = 30_000
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
/** After a program's output ended, how long the API waits for the sidecar to record its exit
 * (the exit is reported right after the end of output and written to the database at once). */
export const MCP_EXIT_RECORD_WAIT_MS = 2_000
/** `send_keys` and `run_workflow` retry a request whose outcome is unknown (503) within their one
 * tool call for at most this long: the agent waits on the call, and a few API timeouts cover a
 * stall or a restart. */
export const MCP_RETRY_MS = 15_000

// ── Storage ─────────────────────────────────────────────────────────────────
/** Health writes a probe row at most this often per process (storage/health.ts); its result
 * stands in between: a write on every health call would be a write per load-balancer ping. */
export const DB_WRITE_PROBE_MS = 5_000
/** How often the sidecar checks, unasked, that its `file:` database's path still names the file
 * it has open (one stat), so a deleted database is logged within seconds, not at the next start. */
export const DB_FILE_CHECK_MS = 5_000
/** An embedded database file is shared by the sidecar and the API; a writer waits this long for
 * the other's lock instead of failing with SQLITE_BUSY (the sidecar's TERMKEEP_DB_BUSY_TIMEOUT_MS
 * overrides it). The wait blocks the waiting process's main thread. */
export const DB_BUSY_TIMEOUT_MS = 10_000
/** The sidecar's own database connection for health's write probe never waits for a lock (busy
 * timeout 0: a probe waiting DB_BUSY_TIMEOUT_MS would block the sidecar's main thread that long).
 * A lock another connection holds this long is no longer one of termkeep's own writes (they last
 * milliseconds) but a stuck one (a `sqlite3` shell left in a transaction, a backup): every
 * termkeep write meanwhile waits on its thread, then fails, so health says `database/locked`. */
export const DB_LOCK_DEGRADED_MS = 2_000
/** While the write lock is found held, the probe is tried again after this long (it costs
 * nothing: it fails at once), so a lock's start and end are seen within it, not DB_WRITE_PROBE_MS. */
export const DB_LOCK_RECHECK_MS = 250
/** A real write's failure (sidecar/retry.ts: a display revision, a terminal row, a journal flush)
 * counts for health until that writer succeeds, or this long after its last failure: a writer
 * still failing retries at least every PERSIST_RETRY_MAX_MS, so it renews within this. */
export const WRITE_FAILURE_WINDOW_MS = 2 * PERSIST_RETRY_MAX_MS
/** Below this much free space on the data directory's or the database's file system, health says
 * `storage/low-space` before writes fail: a journal flush and a display revision are up to a few
 * MiB each, and SQLite needs room for its WAL to grow and be checkpointed. The sidecar's
 * TERMKEEP_DISK_FREE_MIN_BYTES overrides it. */
export const DISK_FREE_MIN_BYTES = 64 * MiB
/** An error's text in health and its log: one line, not a failed query's parameters. */
export const HEALTH_ERROR_TEXT_CHARS = 300
