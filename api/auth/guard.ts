/**
 * Route authorization. `guard(required)` authenticates the bearer token (401), requires its grants
 * (403) and, on routes with a `:sid` parameter, requires that the token's scope covers that
 * session and that the session exists. Both of those failures answer exactly like a missing
 * session (404 `session/not-found`), so a token learns nothing about other sessions.
 */
import { and, eq, isNull } from 'drizzle-orm'
import type { MiddlewareHandler } from 'hono'
import { TermkeepError } from '../../schema/errors.ts'
import type { Grant } from '../../schema/grants.ts'
import { sessions, tokenGrants, tokens, tokenSessions } from '../../schema/tables.ts'
import type { Database } from '../../storage/client.ts'
import type { AppEnv } from '../deps.ts'
import { hashSecret } from './secrets.ts'

export interface Authority {
  tokenId: string
  grants: ReadonlySet<Grant>
  /** 'all', or the session ids this token may touch. */
  sessions: 'all' | ReadonlySet<string>
}

export type Requirement = Grant | { anyOf: readonly Grant[] } | { allOf: readonly Grant[] }

/** Pure: does this authority satisfy the requirement? */
export function satisfies(grants: ReadonlySet<Grant>, required: Requirement): boolean {
  if (typeof required === 'string') return grants.has(required)
  if ('anyOf' in required) return required.anyOf.some((g) => grants.has(g))
  return required.allOf.every((g) => grants.has(g))
}

function describe(required: Requirement): string {
  if (typeof required === 'string') return required
  if ('anyOf' in required) return required.anyOf.join(' or ')
  return required.allOf.join(' and ')
}

/** Pure: may this authority touch the session? */
export function coversSession(authority: Authority, sessionId: string): boolean {
  return authority.sessions === 'all' || authority.sessions.has(sessionId)
}

function bearer(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i)
  return match?.[1]
}

export async function authenticate(db: Database, secret: string, now = Date.now()): Promise<Authority | undefined> {
  const hash = await hashSecret(secret)
  const [token] = await db
    .select({ id: tokens.id, allSessions: tokens.allSessions, expiresAt: tokens.expiresAt })
    .from(tokens)
    .where(and(eq(tokens.secretHash, hash), isNull(tokens.revokedAt)))
    .limit(1)
  if (!token || (token.expiresAt !== null && token.expiresAt <= now)) return undefined
  const [grantRows, sessionRows] = await Promise.all([
    db.select({ grant: tokenGrants.grant }).from(tokenGrants).where(eq(tokenGrants.tokenId, token.id)),
    token.allSessions
      ? Promise.resolve([])
      : db.select({ sessionId: tokenSessions.sessionId }).from(tokenSessions).where(eq(tokenSessions.tokenId, token.id)),
  ])
  return {
    tokenId: token.id,
    grants: new Set(grantRows.map((r) => r.grant as Grant)),
    sessions: token.allSessions ? 'all' : new Set(sessionRows.map((r) => r.sessionId)),
  }
}

export function guard(required: Requirement): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { db } = c.get('deps')
    const secret = bearer(c.req.header('authorization'))
    if (!secret) throw new TermkeepError('auth/missing-token', 'send a bearer token: Authorization: Bearer <token>')
    const authority = await authenticate(db, secret)
    if (!authority) throw new TermkeepError('auth/invalid-token', 'the token is unknown, revoked or expired')
    if (!satisfies(authority.grants, required)) {
      throw new TermkeepError('auth/forbidden', `this token lacks the grant ${describe(required)}`, {
        required: describe(required),
      })
    }
    const sessionId = c.req.param('sid')
    if (sessionId !== undefined) {
      const exists =
        coversSession(authority, sessionId) &&
        (await db.select({ id: sessions.id }).from(sessions).where(eq(sessions.id, sessionId)).limit(1)).length > 0
      if (!exists) throw new TermkeepError('session/not-found', `no session ${sessionId}`)
    }
    c.set('auth', authority)
    await next()
  }
}
