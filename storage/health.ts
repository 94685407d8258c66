/**
 * The database's health as one process sees it: does it answer, can it be written, and (a
 * `file:` database, where a filesystem is: storage/file-identity.ts) does its path still name
 * the file this process has open. A write proves what `SELECT 1` cannot (a read-only file or
 * mount, a full disk, a lock held elsewhere, a read-only token); it is made at most every
 * DB_WRITE_PROBE_MS per process, and its result stands in between, so a health check per second
 * from a load balancer is not a write per second. Each change of state is logged once, loudly.
 * Web APIs only (every runtime).
 */
import type { Client } from '@libsql/client'
import { DB_WRITE_PROBE_MS } from '../schema/limits.ts'
import type { DatabaseHealth, HealthProblem } from '../schema/wire/health.ts'

/** A finding of the file-identity check, with details for the log only. */
export interface FileFinding {
  code: 'database/file-deleted' | 'database/file-replaced'
  message: string
  detail: string
}

export interface StorageReport {
  database: DatabaseHealth
  problems: HealthProblem[]
}

export interface StorageHealthOptions {
  client: Client
  /** Who writes the probe row and is named in `problems` and the log. */
  writer: 'api' | 'sidecar'
  /** The file-identity check (one stat), run at every check. */
  file?: () => FileFinding | undefined
  log?: (line: string) => void
  /** The clock (tests). */
  now?: () => number
}

export class StorageHealth {
  readonly #options: StorageHealthOptions
  readonly #now: () => number
  readonly #log: (line: string) => void
  /** The last write probe: when, and its failure if it failed. */
  #probe: { at: number; error: string | undefined } | undefined
  #probing = false
  /** The last database checks (reachable, written), to which the file check is added. */
  #database: { reachable: boolean; error: string | undefined; writeError: string | undefined } | undefined
  #background: Promise<unknown> | undefined
  /** Problem codes in force, with their messages, as last logged. */
  #logged = new Map<HealthProblem['code'], string>()

  constructor(options: StorageHealthOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
    this.#log = options.log ?? ((line) => console.error(line))
  }

  /** Checks now: the database answers (`SELECT 1`), the file is the opened one, and a write
   * succeeded within DB_WRITE_PROBE_MS (making one if not). */
  async check(): Promise<StorageReport> {
    const { client, writer } = this.#options
    let reachable = true
    let error: string | undefined
    try {
      await client.execute('SELECT 1')
    } catch (cause) {
      reachable = false
      error = messageOf(cause)
    }
    const due = !this.#probe || this.#now() - this.#probe.at >= DB_WRITE_PROBE_MS
    if (reachable && due && !this.#probing) {
      this.#probing = true
      try {
        await client.execute({
          sql: 'INSERT INTO health_probes (writer, checked_at) VALUES (?, ?) ON CONFLICT (writer) DO UPDATE SET checked_at = excluded.checked_at',
          args: [writer, this.#now()],
        })
        this.#probe = { at: this.#now(), error: undefined }
      } catch (cause) {
        this.#probe = { at: this.#now(), error: messageOf(cause) }
      } finally {
        this.#probing = false
      }
    }
    this.#database = { reachable, error, writeError: reachable ? this.#probe?.error : error }
    return this.checkFile()
  }

  /** The file check alone (one stat) over the last database checks: cheap enough for a timer. */
  checkFile(): StorageReport {
    const { writer } = this.#options
    const { reachable, error, writeError } = this.#database ?? { reachable: true, error: undefined, writeError: undefined }
    const problems: HealthProblem[] = []
    const details = new Map<string, string>()
    if (!reachable) problems.push({ code: 'database/unreachable', message: `the database does not answer: ${error}`, source: writer })
    else if (writeError !== undefined) problems.push({ code: 'database/not-writable', message: `the database cannot be written: ${writeError}`, source: writer })
    const file = this.#options.file?.()
    if (file) {
      problems.push({ code: file.code, message: file.message, source: writer })
      details.set(file.code, file.detail)
    }
    const report: StorageReport = {
      database: { reachable, writable: reachable && writeError === undefined, ...(error ? { error } : writeError ? { error: writeError } : {}) },
      problems,
    }
    this.#tell(problems, details)
    return report
  }

  /**
   * The last database checks with a fresh file check, at once (the sidecar's health is its
   * liveness answer: it must not wait for the database); the database is checked again in the
   * background when the last check is older than DB_WRITE_PROBE_MS. Undefined before the first.
   */
  current(): StorageReport | undefined {
    const stale = !this.#probe || this.#now() - this.#probe.at >= DB_WRITE_PROBE_MS
    if (stale && !this.#background) {
      this.#background = this.check()
        .catch(() => undefined)
        .finally(() => (this.#background = undefined))
    }
    return this.#database && this.checkFile()
  }

  /** Logs what changed since the last report: each new problem loudly, each one gone. */
  #tell(problems: HealthProblem[], details: Map<string, string>): void {
    const { writer } = this.#options
    const now = new Map(problems.map((p) => [p.code, p.message] as const))
    for (const [code, message] of now) {
      if (this.#logged.get(code) === message) continue
      const detail = details.get(code)
      this.#log(`termkeep ${writer}: DEGRADED (${code}): ${message}${detail ? ` [${detail}]` : ''}; see docs/reliability.md`)
    }
    for (const code of this.#logged.keys()) if (!now.has(code)) this.#log(`termkeep ${writer}: recovered: ${code} no longer applies`)
    this.#logged = now
  }
}

function messageOf(error: unknown): string {
  const cause = (error as { cause?: { message?: unknown } })?.cause?.message
  const message = String((error as Error)?.message ?? error)
  return (typeof cause === 'string' && !message.includes(cause) ? `${message} (${cause})` : message).replace(/\s+/g, ' ')
}
