/**
 * The termkeep API: one Hono app over Web APIs only, built from its dependencies. Runtime entries
 * (api/runtime/*) construct the dependencies and call createApp; nothing else lives there.
 *
 * Each concern is a route module (a `new Hono<AppEnv>()` declaring full `/v1/...` paths, each
 * route with describeRoute + guard + validate) mounted here with one `app.route('/', …)` line.
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { originGuard } from './auth/origin-guard.ts'
import type { AppDeps, AppEnv } from './deps.ts'
import { commandRoutes } from './commands/routes.ts'
import { displayRoutes } from './display/routes.ts'
import { scrollbackRoutes } from './display/scrollback.ts'
import { notFound, onError } from './errors.ts'
import { fileRoutes } from './files/routes.ts'
import { Fleet } from './hosts/fleet.ts'
import { hostRoutes } from './hosts/routes.ts'
import { mcpRoutes } from './mcp/routes.ts'
import { observationRoutes } from './observation/routes.ts'
import { openApiDocument } from './openapi.ts'
import { nameRoutes } from './registry/name-routes.ts'
import { registryRoutes } from './registry/routes.ts'
import { health } from './routes/health.ts'
import { tokenRoutes } from './routes/tokens.ts'
import { web } from './routes/web.ts'
import { headWithoutStreams } from './sse.ts'
import { streamRoutes, type StreamRoutes } from './stream-routes.ts'
import { terminalRoutes } from './terminals/routes.ts'
import { sessionTerminalRoutes } from './terminals/session-routes.ts'
import { workflowRoutes } from './workflows/routes.ts'

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>()
  // Read from the routes once all are mounted, at the first request.
  let streams: StreamRoutes | undefined
  const fleet = new Fleet({ db: deps.db, local: deps.sidecar, fleetSecret: deps.fleetSecret })
  app.use(async (c, next) => {
    c.set('deps', deps)
    c.set('fleet', fleet.forRequest())
    c.set('streams', (streams ??= streamRoutes(app)))
    await next()
  })
  app.use(headWithoutStreams)
  app.use('/v1/*', originGuard())
  app.use('/mcp', originGuard())
  app.onError(onError)
  app.notFound(notFound)
  app.route('/', health)
  app.route('/', web)
  app.route('/', tokenRoutes)
  app.route('/', registryRoutes)
  app.route('/', hostRoutes)
  app.route('/', nameRoutes)
  app.route('/', terminalRoutes)
  app.route('/', sessionTerminalRoutes)
  app.route('/', commandRoutes)
  app.route('/', displayRoutes)
  app.route('/', scrollbackRoutes)
  app.route('/', fileRoutes)
  app.route('/', observationRoutes)
  app.route('/', workflowRoutes)
  // MCP tools call the routes above through this same app (api/mcp/dispatch.ts).
  app.route('/', mcpRoutes(app))
  app.get('/openapi.json', describeRoute({ tags: ['health'], summary: 'This OpenAPI 3.1 document (no token)' }), openApiDocument(app))
  return app
}
