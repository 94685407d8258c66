/**
 * The sidecar's HTTP surface (loopback only). Every request must carry the API's shared secret;
 * nothing here trusts a path or id in a request as authority.
 */
import { Hono } from 'hono'
import { createHash, timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { bearerChallenge, TermkeepError } from '../schema/errors.ts'
import type { Storage } from '../storage/client.ts'
import type { StorageHealth } from '../storage/health.ts'
import type { SidecarHealth } from '../schema/wire/health.ts'
import { isDatabaseUnavailable } from '../storage/unavailable.ts'
import { commandRoutes } from './commands/routes.ts'
import { displayStatsRoute, screenRoutes } from './display/routes.ts'
import type { DisplayService } from './display/service.ts'
import { fileRoutes } from './files/routes.ts'
import { observationRoutes } from './observation/routes.ts'
import { paths } from './paths.ts'
import { searchRoutes } from './search/routes.ts'
import { terminalRoutes } from './routes/terminals.ts'
import type { TerminalHost } from './terminals/host.ts'
import type { WorkflowEngine } from './workflows/engine.ts'
import { workflowRoutes } from './workflows/routes.ts'

export interface SidecarDeps {
  storage: Storage
  secret: string
  generation: number
  /** Live terminals and their output journals. */
  terminals: TerminalHost
  /** The database's health as this process last saw it (storage/health.ts). */
  health: StorageHealth
  /** TERMKEEP_FILES_ALLOW_OUTSIDE: file reads may leave the session's workspace (off by default). */
  filesAllowOutside?: boolean
  /** The display pipeline, for its statistics route. */
  displays?: DisplayService
  /** Workflow runs (scripts that start sub-agents in terminals). */
  workflows?: WorkflowEngine
}

export function createSidecarApp(deps: SidecarDeps): Hono {
  const app = new Hono()
  app.onError((error, c) => {
    if (error instanceof TermkeepError) {
      const challenge = bearerChallenge(error)
      if (challenge !== undefined) c.header('WWW-Authenticate', challenge)
      return c.json(error.toBody(), error.status)
    }
    if (isDatabaseUnavailable(error)) {
      console.error('termkeep sidecar: the database is unavailable', c.req.method, c.req.path, (error as Error).message)
      return c.json(new TermkeepError('database/unavailable', 'the database is not answering; try again').toBody(), 503)
    }
    if ('status' in error && error.status === 401) {
      const refused = new TermkeepError('auth/invalid-token', 'the sidecar secret is missing or wrong')
      c.header('WWW-Authenticate', bearerChallenge(refused))
      return c.json(refused.toBody(), 401)
    }
    // The caller left and its work stopped (a long read checks the request's signal): no bug.
    if (c.req.raw.signal.aborted) return new Response(null, { status: 503 })
    console.error('termkeep sidecar: unexpected error', c.req.method, c.req.path, error)
    return c.json(new TermkeepError('internal/error', 'internal error').toBody(), 500)
  })
  app.notFound((c) => c.json(new TermkeepError('route/not-found', `no sidecar route ${c.req.path}`).toBody(), 404))
  app.use(secretAuth(deps.secret))
  // The API's liveness answer too: from what was last checked, never waiting for the database.
  app.get('/v1/health', (c) => c.json(sidecarHealth(deps)))
  app.route('/', paths)
  app.route('/', terminalRoutes(deps.terminals))
  app.route('/', commandRoutes(deps.terminals))
  app.route('/', searchRoutes(deps.terminals))
  app.route('/', screenRoutes(deps.terminals))
  const displays = deps.displays
  if (displays)
    app.route(
      '/',
      displayStatsRoute(() => displays.stats()),
    )
  app.route('/', fileRoutes(deps))
  app.route('/', observationRoutes(deps.terminals, deps.secret))
  if (deps.workflows) app.route('/', workflowRoutes(deps.workflows))
  return app
}

function sidecarHealth(deps: SidecarDeps): SidecarHealth {
  const report = deps.health.current()
  const workflows = deps.workflows?.health()
  const problems = [...(report?.problems ?? [])]
  if (workflows && !workflows.available)
    problems.push({ code: 'workflows/unavailable', message: workflows.reason ?? '', source: 'sidecar' })
  return {
    ok: true,
    generation: deps.generation,
    pid: process.pid,
    status: problems.length > 0 ? 'degraded' : 'ok',
    database: report?.database ?? { reachable: true, writable: true },
    ...(workflows ? { workflows } : {}),
    problems,
  }
}

/**
 * Every request carries `Authorization: Bearer <SIDECAR_SECRET>`. Compared in constant time on
 * SHA-256 digests (equal lengths whatever is sent), synchronously: hono's bearerAuth hashes with
 * crypto.subtle, an async thread-pool round trip per request that showed up as ~0.3 ms on every
 * keystroke's input request.
 */
function secretAuth(secret: string): MiddlewareHandler {
  const expected = createHash('sha256').update(`Bearer ${secret}`).digest()
  return async (c, next) => {
    const given = createHash('sha256')
      .update(c.req.header('authorization') ?? '')
      .digest()
    if (!timingSafeEqual(given, expected)) {
      throw new TermkeepError('auth/invalid-token', 'the sidecar secret is missing or wrong')
    }
    await next()
  }
}
