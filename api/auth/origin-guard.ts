/** Applies the Origin and Host policy (origin.ts) to every request of `/mcp` and `/v1/*`. */
import type { MiddlewareHandler } from 'hono'
import { TermkeepError } from '../../schema/errors.ts'
import type { AppEnv } from '../deps.ts'
import { hostAllowed, LOOPBACK_ONLY, originAllowed } from './origin.ts'

export function originGuard(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const policy = c.var.deps.origins ?? LOOPBACK_ONLY
    const url = new URL(c.req.url)
    const host = c.req.header('host') ?? url.host
    if (!hostAllowed(policy, host)) {
      throw new TermkeepError(
        'request/host-not-allowed',
        `this API does not answer requests for host ${host}; a deployment reached under that name lists it in TERMKEEP_ALLOWED_HOSTS`,
        { host },
      )
    }
    const origin = c.req.header('origin')
    if (origin !== undefined && !originAllowed(policy, origin, `${url.protocol}//${host}`)) {
      throw new TermkeepError(
        'request/origin-not-allowed',
        `requests from pages of ${origin} are refused; a page served elsewhere is allowed by listing its origin in TERMKEEP_ALLOWED_ORIGINS`,
        { origin },
      )
    }
    await next()
  }
}
