/**
 * Route authorization. `guard(required)` authenticates the bearer token (401), requires its grants
 * (403) and, on routes with a `:sid` parameter, requires that the token's scope covers that
 * session and that the session exists. Both of those failures answer exactly like a missing
 * session (404 `session/not-found`), so a token learns nothing about other sessions.
 *
 * Without an Authorization header, a GET may instead carry `?ticket=` (see tickets.ts): a
 * single-use ticket minted for exactly this stream path. The long-lived token is never read
 * from a URL. guard only checks the ticket; `openStream` spends it once the route's own checks
 * passed.
 */
import type { Context, MiddlewareHandler } from 'hono'
import { TermkeepError } from '../../schema/errors.ts'
import type { Grant } from '../../schema/grants.ts'
import { authenticateSecret, authenticateTokenId, coversSession, type Authority } from '../../storage/authority.ts'
import type { Database } from '../../storage/client.ts'
import type { AppEnv } from '../deps.ts'
import { SSE_HEADERS } from '../../common/sse.ts'
import type { SseOptions } from '../sse.ts'
import { documented } from '../validate.ts'
import { redeemTicket, ticketHolder } from '../../storage/tickets.ts'

export type Requirement = Grant | { anyOf: readonly Grant[] } | { allOf: readonly Grant[] }

/** Any valid token, no particular grant (minting an EventSource ticket for one's own use). */
export const AUTHENTICATED: Requirement = { allOf: [] }

/** Pure: does this authority satisfy the requirement? */
export function satisfies(grants: ReadonlySet<Grant>, required: Requirement): boolean {
  if (typeof required === 'string') return grants.has(required)
  if ('anyOf' in required) return required.anyOf.some((g) => grants.has(g))
  return required.allOf.every((g) => grants.has(g))
}

export function describe(required: Requirement): string {
  if (typeof required === 'string') return required
  if ('anyOf' in required) return required.anyOf.join(' or ')
  return required.allOf.length === 0 ? 'any valid token' : required.allOf.join(' and ')
}

function bearer(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i)
  return match?.[1]
}

const badTicket = () => new TermkeepError('auth/invalid-token', 'the ticket is unknown, used, expired or for another path')

/** The request's authority, and the ticket it came with (checked, not yet spent). */
async function authorityFor(
  db: Database,
  header: string | undefined,
  ticket: string | undefined,
  method: string,
  path: string,
): Promise<{ authority: Authority; ticket?: string }> {
  if (header !== undefined) {
    // Another scheme carries no bearer token at all: answered as a missing one (RFC 6750 §3.1).
    if (!/^Bearer(\s|$)/i.test(header)) throw new TermkeepError('auth/missing-token', 'send a bearer token: Authorization: Bearer <token>')
    const secret = bearer(header)
    if (!secret) throw new TermkeepError('auth/invalid-token', 'the Authorization header must be "Bearer <token>"')
    const authority = await authenticateSecret(db, secret)
    if (!authority) throw new TermkeepError('auth/invalid-token', 'the token is unknown, revoked or expired')
    return { authority }
  }
  if (ticket !== undefined && method === 'GET') {
    const tokenId = await ticketHolder(db, ticket, path)
    const authority = tokenId === undefined ? undefined : await authenticateTokenId(db, tokenId)
    if (!authority) throw badTicket()
    return { authority, ticket }
  }
  throw new TermkeepError('auth/missing-token', 'send a bearer token: Authorization: Bearer <token>')
}

const UNAUTHORIZED = {
  401: { description: 'no token, or an unknown, revoked or expired one (`auth/missing-token`, `auth/invalid-token`)' },
  403: { description: 'the token lacks the grant (`auth/forbidden`)' },
}

export interface GuardOptions {
  /** Only a token bound to all sessions passes (token management: a token bound to some sessions
   * must not mint or revoke authority beyond them). */
  allSessions?: boolean
}

/** Where a guard keeps its requirement, so a caller of the route (the MCP tools) can ask the route
 * itself what it needs instead of restating it. */
const REQUIRES = Symbol('termkeep.requires')

/** The requirement of a route's guard among its handlers, if it has one. */
export function requirementOf(handler: unknown): Requirement | undefined {
  return (handler as { [REQUIRES]?: Requirement })[REQUIRES]
}

export function guard(required: Requirement, options: GuardOptions = {}): MiddlewareHandler<AppEnv> {
  const middleware: MiddlewareHandler<AppEnv> = async (c, next) => {
    const { db } = c.get('deps')
    const { authority, ticket } = await authorityFor(db, c.req.header('authorization'), c.req.query('ticket'), c.req.method, c.req.path)
    if (!satisfies(authority.grants, required)) {
      throw new TermkeepError('auth/forbidden', `this token lacks the grant ${describe(required)}`, {
        required: describe(required),
      })
    }
    if (options.allSessions && authority.sessions !== 'all') {
      throw new TermkeepError(
        'auth/forbidden',
        `this needs ${describe(required)} on a token bound to all sessions; this token is bound to some`,
        {
          required: describe(required),
        },
      )
    }
    const sessionId = c.req.param('sid')
    if (sessionId !== undefined) {
      const exists = coversSession(authority, sessionId) && (await c.var.fleet.session(sessionId)) !== undefined
      if (!exists) throw new TermkeepError('session/not-found', `no session ${sessionId}`)
    }
    c.set('auth', authority)
    c.set('ticket', ticket)
    await next()
    // A stream answered without openStream would have left its ticket usable again.
    if (c.var.ticket !== undefined && c.res.ok) {
      await c.res.body?.cancel().catch(() => {})
      throw new Error(`${c.req.path} answered a ticket without spending it: stream routes act through openStream`)
    }
  }
  return documented(Object.assign(middleware, { [REQUIRES]: required }), {
    security: [{ bearer: [] }],
    'x-termkeep-grant': describe(required),
    responses: UNAUTHORIZED,
  })
}

/**
 * How every stream route acts, once its checks passed (guard, validate, its own lookups):
 *
 *   return openStream(c, (options) => relaySSE(upstream, () => abort.abort(), options))
 *
 * - The request's ticket is spent here, in one statement, not in guard: a request refused by a
 *   check (a bad query, a bad Last-Event-ID, no display yet) leaves it usable, and of two
 *   requests with one ticket exactly one gets past this point (the other is 401, as if used).
 * - A HEAD stops here with the stream's status and headers: opening a stream may act (a follow
 *   takes input control), so HEAD never opens one. What only opening can tell (the sidecar's 404
 *   for a terminal, 410, 503) is therefore not reflected: HEAD is 200 once the checks pass.
 * - `open` gets the options for its SSE response: the heartbeat, the client's disconnect, and a
 *   re-check of the token at each heartbeat so a revoked or expired token loses its open streams.
 */
export async function openStream(c: Context<AppEnv>, open: (options: SseOptions) => Response | Promise<Response>): Promise<Response> {
  if (c.req.method === 'HEAD') return new Response(null, { status: 200, headers: SSE_HEADERS })
  const ticket = c.var.ticket
  if (ticket !== undefined) {
    c.set('ticket', undefined)
    if ((await redeemTicket(c.var.deps.db, ticket, c.req.path)) !== c.var.auth.tokenId) throw badTicket()
  }
  return open(streamOptions(c))
}

function streamOptions(c: Context<AppEnv>): SseOptions {
  const { db, tuning } = c.var.deps
  const tokenId = c.var.auth.tokenId
  return {
    heartbeatMs: tuning?.heartbeatMs,
    requestSignal: c.req.raw.signal,
    stillAuthorized: async () => (await authenticateTokenId(db, tokenId)) !== undefined,
  }
}
