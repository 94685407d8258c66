/**
 * The database's health as one process sees it: does it answer, can it be written, does it hold
 * a lock that outlasts a write, (a `file:` database, where a filesystem is: file-identity.ts)
 * does its path still name the file this process has open, and (the sidecar) did a real write
 * fail lately (write-failures.ts) or is space running out (free-space.ts).
 *
 * A probe write proves what `SELECT 1` cannot (a read-only file or mount, a read-only token); it
 * is made at most every DB_WRITE_PROBE_MS per process, on a connection that never waits for a
 * lock (storage/client.ts `probe`): found held, the lock is reported, and only a lock held past
 * DB_LOCK_DEGRADED_MS degrades health (a write of the other process's own is normal). Concurrent
 * checks share one. Each change of state is logged once, loudly. Web APIs only (every runtime).
 */
import type { Client } from '@libsql/client'
import { DB_LOCK_DEGRADED_MS, DB_WRITE_PROBE_MS } from '../schema/limits.ts'
import { DB_LOCK_RECHECK_MS } from './tuning.ts'
import type { DatabaseHealth, HealthProblem } from '../schema/wire/health.ts'
import { hasCode } from './causes.ts'
import type { FileFinding, HealthFinding } from './findings.ts'
import { describeError, type WriteFailures } from './write-failures.ts'

export interface StorageReport {
  database: DatabaseHealth
  problems: HealthProblem[]
}

export interface StorageHealthOptions {
  client: Client
  /** The connection the probe writes on; one that never waits for a lock (default `client`). */
  probe?: Client
  /** Who writes the probe row and is named in `problems` and the log. */
  writer: 'api' | 'sidecar'
  /** The file-identity check (one stat), run at every check. */
  file?: () => FileFinding | undefined
  /** The free-space check (a statfs per directory), run at every check. */
  space?: () => HealthFinding | undefined
  /** This process's real writes that failed lately. */
  writes?: WriteFailures
  log?: (line: string) => void
  /** The clock (tests). */
  now?: () => number
}

interface Probe {
  at: number
  error: string | undefined
  /** The write lock was held by another connection. */
  busy: boolean
}

export class StorageHealth {
  readonly #options: StorageHealthOptions
  readonly #now: () => number
  readonly #log: (line: string) => void
  #probe: Probe | undefined
  /** Since when the probe has found the write lock held (undefined: it has not, lately). */
  #lockedSince: number | undefined
  /** The check under way, shared by every caller meanwhile. */
  #checking: Promise<StorageReport> | undefined
  /** The last database checks, to which the cheap checks are added. */
  #database: { reachable: boolean; error: string | undefined; writeError: string | undefined } | undefined
  #background: Promise<unknown> | undefined
  /** Problem codes in force, with their messages, as last logged. */
  #logged = new Map<HealthProblem['code'], string>()

  constructor(options: StorageHealthOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
    this.#log = options.log ?? ((line) => console.error(line))
  }

  /** Checks now: the database answers (`SELECT 1`), a write succeeded within DB_WRITE_PROBE_MS
   * (making one if not), and the cheap checks. Callers meanwhile share this one check. */
  check(): Promise<StorageReport> {
    this.#checking ??= this.#check().finally(() => (this.#checking = undefined))
    return this.#checking
  }

  async #check(): Promise<StorageReport> {
    const { client } = this.#options
    let reachable = true
    let error: string | undefined
    try {
      await client.execute('SELECT 1')
    } catch (cause) {
      reachable = false
      error = describeError(cause)
    }
    if (reachable && this.#probeDue()) await this.#write()
    this.#database = { reachable, error, writeError: reachable ? this.#probe?.error : error }
    return this.checkFile()
  }

  #probeDue(): boolean {
    if (!this.#probe) return true
    return this.#now() - this.#probe.at >= (this.#probe.busy ? DB_LOCK_RECHECK_MS : DB_WRITE_PROBE_MS)
  }

  /** The probe write, on a connection that fails at once (SQLITE_BUSY) where another holds the lock. */
  async #write(): Promise<void> {
    const { client, probe = client, writer } = this.#options
    try {
      await probe.execute({
        sql: 'INSERT INTO health_probes (writer, checked_at) VALUES (?, ?) ON CONFLICT (writer) DO UPDATE SET checked_at = excluded.checked_at',
        args: [writer, this.#now()],
      })
      this.#probe = { at: this.#now(), error: undefined, busy: false }
      this.#lockedSince = undefined
    } catch (cause) {
      if (isBusy(cause)) {
        this.#probe = { at: this.#now(), error: undefined, busy: true }
        this.#lockedSince ??= this.#now()
      } else {
        this.#probe = { at: this.#now(), error: describeError(cause), busy: false }
        this.#lockedSince = undefined
      }
    }
  }

  /** The cheap checks (file identity, free space, failed writes) over the last database checks:
   * cheap enough for a timer and for every sidecar health answer. */
  checkFile(): StorageReport {
    const { writer } = this.#options
    const { reachable, error, writeError } = this.#database ?? { reachable: true, error: undefined, writeError: undefined }
    const problems: HealthProblem[] = []
    const details = new Map<string, string>()
    const heldMs = this.#lockedSince === undefined ? undefined : this.#now() - this.#lockedSince
    if (!reachable) problems.push({ code: 'database/unreachable', message: `the database does not answer: ${error}`, source: writer })
    else if (writeError !== undefined)
      problems.push({ code: 'database/not-writable', message: `the database cannot be written: ${writeError}`, source: writer })
    else if (heldMs !== undefined && heldMs >= DB_LOCK_DEGRADED_MS) {
      problems.push({
        code: 'database/locked',
        message: `another connection has held the database's write lock for over ${DB_LOCK_DEGRADED_MS / 1000} s: termkeep's writes wait for it, then fail`,
        source: writer,
      })
    }
    const findings = [this.#options.file?.(), this.#options.space?.(), this.#options.writes?.finding()]
    for (const finding of findings) {
      if (!finding) continue
      problems.push({ code: finding.code, message: finding.message, source: writer })
      if (finding.detail) details.set(finding.code, finding.detail)
    }
    const failing = problems.some((p) => p.code === 'database/locked') || findings.some((f) => f?.database)
    const database: DatabaseHealth = { reachable, writable: reachable && writeError === undefined && !failing }
    if (error ?? writeError) database.error = error ?? writeError
    if (reachable && heldMs !== undefined && !failing) {
      database.note = `another connection holds the write lock (found ${Math.round(heldMs)} ms ago); degraded if held ${DB_LOCK_DEGRADED_MS / 1000} s`
    }
    this.#tell(problems, details)
    return { database, problems }
  }

  /**
   * The last database checks with fresh cheap checks, at once (the sidecar's health is its
   * liveness answer: it must not wait for the database); the database is checked again in the
   * background when its last check is due. Undefined before the first.
   */
  current(): StorageReport | undefined {
    if (this.#probeDue() && !this.#background) {
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

/** Another connection holds the write lock (the probe's connection does not wait for it). */
const isBusy = (error: unknown) => hasCode(error, /^SQLITE_(BUSY|LOCKED)/)
