/**
 * Health: the API's `GET /v1/health` (no token) and the sidecar's own. `status` is `ok` only when
 * every check passed; otherwise `degraded`, with one `problems` entry per failed check, each with
 * its code and a sentence. What an operator does about each code: docs/reliability.md.
 */
import * as v from 'valibot'

/** Every reason health can give for `degraded`. */
export const HEALTH_PROBLEMS = [
  /** The database does not answer at all. */
  'database/unreachable',
  /** It answers but a write fails (read-only file or mount, full disk, a lock held, a read-only
   * token of a remote database). */
  'database/not-writable',
  /** Another connection has held the write lock past DB_LOCK_DEGRADED_MS (a shorter hold is a
   * `database.note`, not a problem). */
  'database/locked',
  /** The `file:` database was deleted under the running process, which still writes into it. */
  'database/file-deleted',
  /** The `file:` database's path now names another file than the one open. */
  'database/file-replaced',
  /** A real write (a display revision, a terminal row, a journal flush) failed for lack of space
   * (SQLITE_FULL, ENOSPC, EDQUOT) within WRITE_FAILURE_WINDOW_MS and has not succeeded since. */
  'storage/disk-full',
  /** A real write failed otherwise (SQLITE_BUSY past the busy timeout, an I/O error) and has
   * not succeeded since. */
  'storage/write-failed',
  /** The data directory's or the database's file system has less than DISK_FREE_MIN_BYTES free. */
  'storage/low-space',
  /** The API cannot reach the sidecar (live routes answer 503 meanwhile). */
  'sidecar/unreachable',
  /** Workflow runs are refused: the script engine does not load, or script processes cannot get
   * the namespaces TERMKEEP_WORKFLOW_NAMESPACES requires (`sidecar.workflows.reason` says which). */
  'workflows/unavailable',
] as const
export type HealthProblemCode = (typeof HEALTH_PROBLEMS)[number]

export const HealthProblem = v.object({
  code: v.picklist(HEALTH_PROBLEMS),
  message: v.string(),
  /** Which process found it: `api` or `sidecar`. */
  source: v.picklist(['api', 'sidecar']),
})
export type HealthProblem = v.InferOutput<typeof HealthProblem>

export const DatabaseHealth = v.object({
  reachable: v.boolean(),
  /** The probe write succeeded within the last DB_WRITE_PROBE_MS (or found the lock held briefly),
   * and no real database write failed since (false: see `problems`). */
  writable: v.boolean(),
  error: v.optional(v.string()),
  /** Something worth knowing that is not (yet) a problem: another connection holds the write lock. */
  note: v.optional(v.string()),
})
export type DatabaseHealth = v.InferOutput<typeof DatabaseHealth>

/** How this sidecar runs workflow scripts (decided once at its start: sidecar/workflows/sandbox.ts). */
export const WorkflowsHealth = v.object({
  /** Runs can start: the engine loads and a script process starts as configured. */
  available: v.boolean(),
  /** Script processes run in user, PID and network namespaces of their own (the second wall). */
  namespaces: v.boolean(),
  /** Why runs are refused, or why scripts run without namespaces. */
  reason: v.optional(v.string()),
})
export type WorkflowsHealth = v.InferOutput<typeof WorkflowsHealth>

/** The sidecar's own health (loopback, the shared secret): answered from what it last checked,
 * never waiting for the database, so it is also the API's liveness answer. */
export const SidecarHealth = v.object({
  ok: v.literal(true),
  generation: v.number(),
  pid: v.number(),
  status: v.picklist(['ok', 'degraded']),
  database: DatabaseHealth,
  workflows: v.optional(WorkflowsHealth),
  problems: v.array(HealthProblem),
})
export type SidecarHealth = v.InferOutput<typeof SidecarHealth>

export const Health = v.object({
  status: v.picklist(['ok', 'degraded']),
  /** The runtime serving the API: `node`, `deno`, `workerd`. */
  runtime: v.string(),
  /** As last checked; `ageMs` says how long ago when the check did not answer within HEALTH_WAIT_MS. */
  database: v.object({ ...DatabaseHealth.entries, ageMs: v.optional(v.number()) }),
  /** As the sidecar last answered (health never waits for it past HEALTH_WAIT_MS). */
  sidecar: v.object({
    reachable: v.boolean(),
    generation: v.optional(v.number()),
    error: v.optional(v.string()),
    /** How old this state is, in ms: 0 when the sidecar answered this request in time; else the
     * age of its last answer, or of the verdict that it is not reachable. */
    ageMs: v.number(),
    /** Present while the sidecar's health has been asked and not answered: for how long (ms). A
     * sidecar that does not answer within 5 s is then `reachable: false`. */
    waitingMs: v.optional(v.number()),
    /** How it runs workflow scripts (while it is reachable). */
    workflows: v.optional(WorkflowsHealth),
  }),
  /** Empty when `status` is `ok`; the API's findings first, then the sidecar's. */
  problems: v.array(HealthProblem),
})
export type Health = v.InferOutput<typeof Health>
