import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { Health, type HealthProblem } from '../../schema/wire/health.ts'
import { StorageHealth } from '../../storage/health.ts'
import type { AppDeps, AppEnv } from '../deps.ts'
import { json } from '../openapi.ts'

/** One database health per app: its write probe's last result stands for DB_WRITE_PROBE_MS. */
const storageHealth = new WeakMap<AppDeps, StorageHealth>()

function storageHealthOf(deps: AppDeps): StorageHealth {
  let health = storageHealth.get(deps)
  if (!health) {
    health = new StorageHealth({ client: deps.client, probe: deps.probe, writer: 'api', file: deps.databaseFile })
    storageHealth.set(deps, health)
  }
  return health
}

/**
 * The database (answers, can be written, is still the file opened) and the sidecar (reachable,
 * and its own view of the database); never requires a token. `degraded` lists every problem.
 */
export const health = new Hono<AppEnv>().get(
  '/v1/health',
  describeRoute({
    tags: ['health'],
    summary: 'Liveness; database reachability, writability and file identity; sidecar reachability (no token)',
    description:
      "`status` is `ok` only when every check passed, else `degraded` with one `problems` entry per failed check (`database/unreachable`, `database/not-writable`, `database/locked`, `database/file-deleted`, `database/file-replaced`, `storage/disk-full`, `storage/write-failed`, `storage/low-space`, `sidecar/unreachable`, `workflows/unavailable`), from the API or the sidecar. `sidecar.workflows` says whether workflow runs can start and whether their script processes run in namespaces of their own. The write check runs at most every 5 s per process and never waits for another connection's lock: a lock held under 2 s is `database.note`, longer `database/locked`. What to do about each: docs/reliability.md.",
    responses: { 200: json(Health, '`status` is `ok` or `degraded`') },
  }),
  async (c) => {
    const deps = c.get('deps')
    const [storage, side] = await Promise.all([
      storageHealthOf(deps).check(),
      deps.sidecar.health().then(
        (h) => ({ reachable: true as const, generation: h.generation, workflows: h.workflows, problems: h.problems ?? [] }),
        (error: unknown) => ({
          reachable: false as const,
          error: String((error as Error)?.message ?? error),
          problems: [] as HealthProblem[],
        }),
      ),
    ])
    const problems = [...storage.problems, ...side.problems]
    if (!side.reachable) problems.push({ code: 'sidecar/unreachable', message: side.error, source: 'api' })
    const sidecar = side.reachable
      ? { reachable: true, generation: side.generation, ...(side.workflows ? { workflows: side.workflows } : {}) }
      : { reachable: false, error: side.error }
    return c.json({
      status: problems.length > 0 ? 'degraded' : 'ok',
      runtime: deps.runtime,
      database: storage.database,
      sidecar,
      problems,
    } satisfies Health)
  },
)
