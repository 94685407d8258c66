import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { pingStorage } from '../../storage/client.ts'
import type { AppEnv } from '../deps.ts'

/** Liveness plus reachability of the database and the sidecar; never requires a token. */
export const health = new Hono<AppEnv>().get(
  '/v1/health',
  describeRoute({
    tags: ['health'],
    summary: 'Liveness, database and sidecar reachability (no token)',
    responses: { 200: { description: '`status` is `ok` or `degraded`' } },
  }),
  async (c) => {
    const { client, sidecar, runtime } = c.get('deps')
    const [database, side] = await Promise.all([
      pingStorage(client).then(
        () => ({ reachable: true as const }),
        (error: unknown) => ({ reachable: false as const, error: String((error as Error)?.message ?? error) }),
      ),
      sidecar.health().then(
        (h) => ({ reachable: true as const, generation: h.generation }),
        (error: unknown) => ({ reachable: false as const, error: String((error as Error)?.message ?? error) }),
      ),
    ])
    const status = database.reachable && side.reachable ? 'ok' : 'degraded'
    return c.json({ status, runtime, database, sidecar: side })
  },
)
