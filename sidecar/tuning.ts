/**
 * The sidecar's own tuning: knobs of this process that no client relies on, each with its reason
 * (the public contract's limits are schema/limits.ts). Change one here and only the sidecar
 * behaves differently; the wire stays as it is.
 */

import { HOST_HEARTBEAT_MS, HOST_LEASE_MS } from '../schema/limits.ts'

const KiB = 1024
const MiB = 1024 * KiB

// ── Journal ──────────────────────────────────────────────────────────
/** Encoded watchOutput batches (~1.4 MB each) one terminal keeps for its other watchers at the
 * same cursor (sidecar/journal/shared-batches.ts): enough for watchers a few batches apart to
 * share every batch, small beside the copies it saves (200 watchers had each made their own). */
export const WATCH_SHARED_BATCHES_BYTES = 8 * MiB

// ── Terminals ─────────────────────────────────────────────────────────────────
/** A failed close cleanup is retried after this long. */
export const CLOSE_RETRY_MS = 60_000
/** A terminal nobody holds, follows or types into, and whose program printed nothing, is
 * reclaimed (closed) after this long idle. Output counts: a build left running unwatched for
 * hours is not idle, and is not killed. */
export const TERMINAL_IDLE_RECLAIM_MS = 2 * 60 * 60_000

// ── Emulators ─────────────────────────────────────────────────────────────────
/** Emulator worker threads per sidecar; terminals share them (each boot costs ~0.5 s of CPU). */
export const EMULATOR_WORKERS = 2
/** Bytes one emulator may have been sent but not yet applied: bounds the feed's memory while
 * the emulator (≈4× slower than a PTY) lags behind a flood; the journal holds the rest. */
export const EMULATOR_MAX_INFLIGHT_BYTES = 1 * MiB
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
/** Bytes of an unfinished plain-text stretch the fast-forward planner may hold back from one
 * window to the next, so a flood arriving in small windows is skipped as if read in one piece
 * (~6,700 lines at 120 columns need ~0.6 MB of typical text); a longer stretch is written out. */
export const EMULATOR_FAST_FORWARD_HOLD_BYTES = 2 * MiB

// ── Display revisions ─────────────────────────────────────────────────────────
/** Quiet time after output before the screen counts as settled and is persisted. */
export const SETTLE_WINDOW_MS = 250
/** A screen that never goes quiet (a progress bar, a clock, a log) is still settled this long
 * after its first unsettled change. With the emulator's own lag (≤ ~2 s measured in a 3-terminal
 * flood on 2 cores, bench display-scale) and the write, the newest revision then covers the
 * journal up to at most 5 s ago at any moment (docs/display.md): what a crash can lose. */
export const SETTLE_MAX_WAIT_MS = 2_000
/** How often the sidecar sweeps the revisions of terminals that write no more. */
export const DISPLAY_PRUNE_SWEEP_MS = 2 * 60_000
/** The newest history chunk below this size absorbs the next revision's new rows (rewritten
 * whole), so a shell that adds a line per revision does not leave a chunk per line; the rewrite
 * is bounded by this per revision. */
export const DISPLAY_HISTORY_MERGE_BYTES = 4 * KiB
/** When a terminal's emulator closes, its last settle waits at most this long for the emulator
 * to catch up with the journal (a shutdown must not hang on a large backlog). */
export const DISPLAY_DRAIN_MS = 5_000

// ── Host generations ──────────────────────────────────────────────────────────
/** How often a sidecar refreshes its generation's heartbeat in the database: what tells a sidecar
 * on another machine, and the API, that it still runs (on the same machine its pid and start time
 * tell at once). A contract with the API, hence schema/limits.ts. */
export const GENERATION_HEARTBEAT_MS = HOST_HEARTBEAT_MS
/** A generation on another machine whose heartbeat is younger than this is taken to be alive. */
export const GENERATION_LEASE_MS = HOST_LEASE_MS

// ── Files ─────────────────────────────────────────────────────────────────────
/** Changes queued for one slow `files/changes` subscriber before it is disconnected. */
export const MAX_FILE_CHANGES_QUEUED = 10_000
/** Directories the OS watcher of one workspace watches (one inotify watch each), shallowest first. */
export const MAX_WATCHED_DIRECTORIES = 8_192
/** Entries of the data directory looked through for a hard link of one of its files (a regular
 * file with several links on its device); past this, every such file there counts as termkeep's. */
export const OWN_STATE_MAX_SCANNED = 20_000

// ── Observation ───────────────────────────────────────────────────────────────
/** Descriptors looked at per process for `openFiles`: a server holding 100,000 sockets must not
 * make one request read 100,000 links. */
export const OBSERVE_MAX_DESCRIPTORS_PER_PROCESS = 4_096
/** How much of /proc/<pid>/environ and /proc/<pid>/cmdline is read (the kernel's ARG_MAX-ish
 * bound for both together is 2 MiB; a process that exceeds this loses the tail, not the call). */
export const OBSERVE_MAX_PROC_TEXT_BYTES = 2 * MiB
/** Directory entries one listing looks at in all: a root over a huge tree answers `truncated`
 * after this many instead of walking it for seconds. */
export const OBSERVE_MAX_LIST_SCANNED = 20_000
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
/** After output or input, the terminal's foreground program is looked at again this soon (a
 * command the shell just started has its process group by then); at most once per this long. */
export const FOREGROUND_CHECK_DELAY_MS = 150
/** And this often regardless, for a program that changes without a byte of I/O (a script that
 * starts `sleep`): two /proc reads per live terminal. */
export const FOREGROUND_POLL_MS = 2_000

// ── HTTP and the database ─────────────────────────────────────────────────────
/** The sidecar keeps an idle kept-alive connection of the API's open this long (Node's default is
 * 5 s). A sidecar that resumes after a stall runs its due timers before it reads its sockets, so
 * a request that arrived on an idle connection during a stall longer than this is dropped unread;
 * longer than a call's whole budget (SIDECAR_SLOW_CALL_TIMEOUT_MS), every request the API sent is
 * carried out once the sidecar resumes, as a 503's "unknown" outcome says it may be. */
export const SIDECAR_KEEP_ALIVE_MS = 30_000
/** How often the sidecar checks, unasked, that its `file:` database's path still names the file
 * it has open (one stat), so a deleted database is logged within seconds, not at the next start. */
export const DB_FILE_CHECK_MS = 5_000
