/**
 * The storage layer's own tuning (both processes write through it), each with its reason (the
 * public contract's limits are schema/limits.ts).
 */

const KiB = 1024
const MiB = 1024 * KiB

// ── Display revisions ─────────────────────────────────────────────────────────
/** Display revisions kept per terminal besides the newest, and how long an older one survives
 * pruning at least: a readDisplay that began on it can finish streaming. Its own part is the
 * viewport (read first, within milliseconds); its history rows are shared with the revisions
 * after it, so they outlive it anyway until they scroll out of every kept revision. (It was 2
 * minutes while every revision held its whole history: a busy terminal then kept ~100 revisions.) */
export const DISPLAY_KEEP_REVISIONS = 3
export const DISPLAY_KEEP_MS = 15_000
/** Stored history rows are grouped into chunks of at most this much JSON: large enough that a
 * 10,000-row history is a few dozen database rows, small enough to page through. */
export const DISPLAY_HISTORY_CHUNK_BYTES = 32 * KiB

// ── Writes that fail ──────────────────────────────────────────────────────────
/** A write of the sidecar's that failed (a display revision, a terminal's state, title or exit)
 * is tried again after this, doubling up to the max, until it lands. */
export const PERSIST_RETRY_MS = 1_000
export const PERSIST_RETRY_MAX_MS = 30_000
/** A real write's failure (sidecar/write-retry.ts: a display revision, a terminal row, a journal flush)
 * counts for health until that writer succeeds, or this long after its last failure: a writer
 * still failing retries at least every PERSIST_RETRY_MAX_MS, so it renews within this. */
export const WRITE_FAILURE_WINDOW_MS = 2 * PERSIST_RETRY_MAX_MS
/** An error's text in health and its log: one line, not a failed query's parameters. */
export const HEALTH_ERROR_TEXT_CHARS = 300

// ── Resources ─────────────────────────────────────────────────────────────────
/** A stored resource larger than this is written as parts of this size, one statement each with
 * a yield between: the embedded database driver writes a blob on the event loop (~10 ms/MiB). */
export const RESOURCE_PART_BYTES = 1 * MiB
/** A resource's parts still unfinished after this long belong to a store a crash cut short
 * (a store takes seconds); the next store deletes them. */
export const RESOURCE_UPLOAD_ABANDON_MS = 60 * 60_000

// ── Connections ───────────────────────────────────────────────────────────────
/** An embedded database file is shared by the sidecar and the API; a writer waits this long for
 * the other's lock instead of failing with SQLITE_BUSY (the sidecar's TERMKEEP_DB_BUSY_TIMEOUT_MS
 * overrides it). The wait blocks the waiting process's main thread. */
export const DB_BUSY_TIMEOUT_MS = 10_000
/** While the write lock is found held, the probe is tried again after this long (it costs
 * nothing: it fails at once), so a lock's start and end are seen within it, not DB_WRITE_PROBE_MS. */
export const DB_LOCK_RECHECK_MS = 250
