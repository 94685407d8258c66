/**
 * The termkeep API: one Hono app over Web APIs only, built from its dependencies. Runtime entries
 * (api/runtime/*) construct the dependencies and call createApp; nothing else lives there.
 */
import { Hono } from 'hono'
import type { AppDeps, AppEnv } from './deps.ts'
import { notFound, onError } from './errors.ts'
import { health } from './routes/health.ts'

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>()
  app.use(async (c, next) => {
    c.set('deps', deps)
    await next()
  })
  app.onError(onError)
  app.notFound(notFound)
  app.route('/', health)
  return app
}
