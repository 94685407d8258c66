/**
 * Real writes that failed, for health: a tiny probe write proves little on a full disk (SQLite's
 * WAL is preallocated, so the probe lands while a display revision or a journal flush fails with
 * SQLITE_FULL / ENOSPC). Every writer that waits out a failure (sidecar/write-retry.ts) reports here;
 * a writer's failure counts until that writer succeeds again, or WRITE_FAILURE_WINDOW_MS after
 * its last failure (a writer that gave up — its terminal closed — stops renewing it). Web APIs
 * only (every runtime).
 */
import { HEALTH_ERROR_TEXT_CHARS, WRITE_FAILURE_WINDOW_MS } from './tuning.ts'
import { causes, codeOf, hasCode } from './causes.ts'
import type { HealthFinding } from './findings.ts'

interface Failure {
  at: number
  what: string
  error: string
  full: boolean
  /** A database write (libSQL's error), not a journal file's. */
  database: boolean
}

export class WriteFailures {
  /** The failing writers (each its own key), with their last failure. */
  readonly #failing = new Map<object, Failure>()
  readonly #now: () => number

  constructor(now: () => number = Date.now) {
    this.#now = now
  }

  /** `writer`'s write failed; `what` names it ("persisting terminal s/t"). */
  failed(writer: object, what: string, error: unknown): void {
    this.#failing.delete(writer) // to the end: the latest failure is last, even within one millisecond
    this.#failing.set(writer, {
      at: this.#now(),
      what,
      error: describeError(error),
      full: isOutOfSpace(error),
      database: isDatabaseError(error),
    })
    this.#prune()
  }

  /** `writer`'s write succeeded: its earlier failure no longer counts. */
  succeeded(writer: object): void {
    this.#failing.delete(writer)
  }

  /** What health says: out of space if any failing writer is, else write-failed; undefined
   * while nothing failed within the window. The message is stable while the state is (it is
   * logged once per change); the latest failure goes in `detail`. */
  finding(): HealthFinding | undefined {
    this.#prune()
    const failures = [...this.#failing.values()]
    if (failures.length === 0) return undefined
    const last = failures.reduce((a, b) => (b.at >= a.at ? b : a))
    const full = failures.some((f) => f.full)
    const database = failures.some((f) => f.database)
    const detail = `${failures.length} writer(s) failing; the latest: ${last.what}: ${last.error}`
    if (full) {
      return {
        code: 'storage/disk-full',
        message:
          "termkeep's writes fail for lack of space (the disk or a quota is full): output is paused and writes are retried until there is room",
        detail,
        database,
      }
    }
    return { code: 'storage/write-failed', message: `termkeep's writes fail and are being retried: ${last.error}`, detail, database }
  }

  #prune(): void {
    const now = this.#now()
    for (const [writer, failure] of this.#failing) if (now - failure.at >= WRITE_FAILURE_WINDOW_MS) this.#failing.delete(writer)
  }
}

/** A write failed for lack of space: SQLite's SQLITE_FULL, the file system's ENOSPC or EDQUOT,
 * anywhere in the cause chain (drizzle wraps libSQL's error). */
export function isOutOfSpace(error: unknown): boolean {
  if (hasCode(error, /^(SQLITE_FULL|ENOSPC|EDQUOT)/)) return true
  for (const e of causes(error)) if (/database or disk is full|no space left on device/i.test(e.message)) return true
  return false
}

/** A libSQL failure (its codes: SQLITE_*, HRANA_*, SERVER_ERROR) rather than a file's (ENOSPC). */
const isDatabaseError = (error: unknown) => hasCode(error, /^(SQLITE_|HRANA_|SERVER_ERROR|CLIENT_CLOSED)/)

/** One line for an error: the outermost coded one's message (libSQL's, not drizzle's "Failed
 * query: …" with its parameters, which may be megabytes of blob), else its own, capped. */
export function describeError(error: unknown): string {
  const coded = [...causes(error)].find((e) => codeOf(e) !== undefined)
  const message = coded ? coded.message : String((error as Error)?.message ?? error)
  const line = message.replace(/\s+/g, ' ')
  return line.length > HEALTH_ERROR_TEXT_CHARS ? `${line.slice(0, HEALTH_ERROR_TEXT_CHARS)}…` : line
}
