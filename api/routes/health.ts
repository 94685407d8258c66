import { type Context, Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { HEALTH_WAIT_MS } from '../tuning.ts'
import { Health, type HealthProblem } from '../../schema/wire/health.ts'
import { StorageHealth } from '../../storage/health.ts'
import type { AppDeps, AppEnv } from '../deps.ts'
import { SidecarHealthView, within } from '../health-view.ts'
import { json } from '../openapi.ts'

/** Per app: the database's health (its write probe's last result stands for DB_WRITE_PROBE_MS),
 * when it last answered, and the sidecar's health as last known (health-view.ts). */
interface Views {
  storage: StorageHealth
  storageAt: number | undefined
  sidecar: SidecarHealthView
}
const views = new WeakMap<AppDeps, Views>()

function viewsOf(deps: AppDeps): Views {
  let found = views.get(deps)
  if (!found) {
    found = {
      storage: new StorageHealth({ client: deps.client, probe: deps.probe, writer: 'api', file: deps.databaseFile }),
      storageAt: undefined,
      sidecar: new SidecarHealthView(() => deps.sidecar.health()),
    }
    views.set(deps, found)
  }
  return found
}

/** Lets work outlive the response where the runtime would end it (Workers' waitUntil). */
function keeper(c: Context<AppEnv>): ((pending: Promise<unknown>) => void) | undefined {
  try {
    const context = c.executionCtx
    return (pending) => context.waitUntil(pending.catch(() => undefined))
  } catch {
    return undefined // Node and Deno: pending work goes on by itself
  }
}

/** The database within HEALTH_WAIT_MS once it was checked: checked now, else as last checked
 * with its age. Its first check is waited for (there is nothing to report instead). */
async function databaseView(
  view: Views,
  keep: ReturnType<typeof keeper>,
): Promise<{ database: Health['database']; problems: HealthProblem[] }> {
  const checkedAt = view.storageAt
  const checking = view.storage.check().then((report) => {
    view.storageAt = Date.now()
    return report
  })
  const report = checkedAt === undefined ? await checking : await within(checking, HEALTH_WAIT_MS)
  if (report) return report
  keep?.(checking)
  const last = view.storage.current()!
  return { database: { ...last.database, ageMs: Date.now() - checkedAt! }, problems: last.problems }
}

/** Checks the database and asks the sidecar once, so that a first health call finds both known
 * (the Node entry calls it as it starts listening). */
export function primeHealth(deps: AppDeps): void {
  const view = viewsOf(deps)
  view.sidecar.prime()
  void databaseView(view, undefined).catch(() => undefined)
}

/**
 * The database (answers, can be written, is still the file opened) and the sidecar (reachable,
 * and its own view of the database); never requires a token, and never waits more than
 * HEALTH_WAIT_MS for either. `degraded` lists every problem.
 */
export const health = new Hono<AppEnv>().get(
  '/v1/health',
  describeRoute({
    tags: ['health'],
    summary: 'Liveness; database reachability, writability and file identity; sidecar reachability (no token)',
    description:
      "`status` is `ok` only when every check passed, else `degraded` with one `problems` entry per failed check (`database/unreachable`, `database/not-writable`, `database/locked`, `database/file-deleted`, `database/file-replaced`, `storage/disk-full`, `storage/write-failed`, `storage/low-space`, `sidecar/unreachable`, `workflows/unavailable`), from the API or the sidecar. `sidecar.workflows` says whether workflow runs can start and whether their script processes run in namespaces of their own. The write check runs at most every 5 s per process and never waits for another connection's lock: a lock held under 2 s is `database.note`, longer `database/locked`. It answers within 250 ms: what the sidecar or the database did not answer within 150 ms is reported as last known, with its age (`ageMs`) and, for the sidecar, how long its health has been waited for (`waitingMs`); a sidecar that does not answer within 5 s is `sidecar/unreachable`. What to do about each: docs/reliability.md.",
    responses: { 200: json(Health, '`status` is `ok` or `degraded`') },
  }),
  async (c) => {
    const view = viewsOf(c.get('deps'))
    const keep = keeper(c)
    const [storage, sidecar] = await Promise.all([databaseView(view, keep), view.sidecar.current(keep)])
    const problems = [...storage.problems, ...sidecar.problems]
    if (!sidecar.reachable) problems.push({ code: 'sidecar/unreachable', message: sidecar.error ?? 'not reachable', source: 'api' })
    const { problems: _, ...shown } = sidecar
    return c.json({
      status: problems.length > 0 ? 'degraded' : 'ok',
      runtime: c.get('deps').runtime,
      database: storage.database,
      sidecar: shown,
      problems,
    } satisfies Health)
  },
)
