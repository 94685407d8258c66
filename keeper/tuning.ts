/**
 * The keeper's own tuning: not part of any public contract, each with why it is what it is.
 */
const MiB = 1024 * 1024

/**
 * Bytes the PTY thread may have read and handed to the main thread that the journal has not
 * confirmed yet. Above this it stops reading the PTY (the program blocks on its next write, as
 * under tmux or a paused terminal) until the journal catches up to half of it: a journal that
 * cannot write (a full disk, a stalled main thread) never makes a flood pile up in memory.
 */
export const PTY_UNJOURNALED_MAX_BYTES = 8 * MiB
/** The keeper's stop: how long the PTY thread waits for its killed processes' exits before it is
 * terminated (terminating it while node-pty reports an exit crashes the process). */
export const PTY_EXIT_WAIT_MS = 2000

/** A journal write that failed (a full disk) is tried again after this, doubling … */
export const KEEPER_RETRY_MS = 1_000
/** … up to this: once space returns, a paused program resumes within it. */
export const KEEPER_RETRY_MAX_MS = 5_000

/** A keeper with no terminal and no sidecar connected exits after this long: nothing lingers on a
 * machine that stopped using termkeep, and a sidecar restarting meanwhile starts a new one. */
export const KEEPER_IDLE_EXIT_MS = 10_000

/** KEEPER_IDLE_EXIT_MS, or TERMKEEP_KEEPER_IDLE_EXIT_MS from the keeper's environment (its starter's,
 * docs/operations.md): a test of the idle exit need not wait the default's 10 s. */
export function keeperIdleExitMs(raw = process.env.TERMKEEP_KEEPER_IDLE_EXIT_MS): number {
  if (raw === undefined || raw === '') return KEEPER_IDLE_EXIT_MS
  const ms = Number(raw)
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new Error(`TERMKEEP_KEEPER_IDLE_EXIT_MS: a positive number of milliseconds, not ${raw}`)
  return ms
}

/** How often the keeper looks whether its socket file is still the one it listens on (someone
 * removed or replaced it: it says so and takes the path back). */
export const KEEPER_SOCKET_CHECK_MS = 2_000

/** A flush up to this size goes to the sidecar with its bytes (an echo, a prompt: the sidecar's
 * readers take them from memory, no file read on the way to the client). A bigger one (a flood)
 * goes as its index entries alone: the sidecar reads the bytes from the spool in the page cache,
 * one copy, where sending them would cost three (into the socket, out of it, joining the frame). */
export const KEEPER_INLINE_FLUSH_BYTES = 64 * 1024

/** Output is sent with its bytes only while less than this waits unsent on the sidecar's socket:
 * a sidecar that lags reads from the spool instead. */
export const KEEPER_INLINE_MAX_BYTES = 4 * MiB

/** A sidecar that leaves this much unread is stalled (stopped, or hung): the keeper drops the
 * connection rather than buffer without bound; its terminals keep running and a restarted sidecar
 * adopts them. */
export const KEEPER_CLIENT_BACKLOG_MAX_BYTES = 64 * MiB

/** A connection that has not proven itself within this is closed. */
export const KEEPER_HANDSHAKE_MS = 5_000

/** At the keeper's stop (SIGTERM), how long its terminals' processes get after SIGHUP before
 * SIGKILL, and how long it then waits for them to be gone. */
export const KEEPER_STOP_GRACE_MS = 500
export const KEEPER_STOP_WAIT_MS = 3_000

/** When the keeper stops, how long it waits for what it last sent (its terminals' exits) to reach
 * the sidecar before it exits. */
export const KEEPER_FLUSH_WAIT_MS = 1_000

/** The keeper's log (keeper.log in its directory) is moved to keeper.log.1 at a start once it is
 * bigger than this: it holds one line per event, never per byte. */
export const KEEPER_LOG_MAX_BYTES = 1 * MiB
