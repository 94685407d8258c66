/**
 * A token's authority as libSQL records it: its grants and the sessions it may touch, or nothing
 * when it is unknown, revoked or expired. The API derives it for every request (api/auth/guard.ts);
 * the sidecar derives it again for each `readText()` of a workflow run, from the token id the run
 * was started with, so a script never reads what its caller could not (now). Runtime-neutral.
 */
import { and, eq, isNull, type SQL } from 'drizzle-orm'
import { hashSecret } from '../common/crypto.ts'
import type { Grant } from '../schema/grants.ts'
import { tokenGrants, tokens, tokenSessions } from './tables.ts'
import type { Database } from './client.ts'

export interface Authority {
  tokenId: string
  grants: ReadonlySet<Grant>
  /** 'all', or the session ids this token may touch. */
  sessions: 'all' | ReadonlySet<string>
}

/** Pure: may this authority touch the session? */
export function coversSession(authority: Authority, sessionId: string): boolean {
  return authority.sessions === 'all' || authority.sessions.has(sessionId)
}

/** The authority of a token by id (a redeemed ticket names its token; so does a workflow run). */
export function authenticateTokenId(db: Database, tokenId: string, now = Date.now()): Promise<Authority | undefined> {
  return authorityOf(db, eq(tokens.id, tokenId), now)
}

/** Bearer secrets hashed lately. Every request hashes its bearer, and on Node the Web Crypto
 * digest runs on the thread pool: a keystroke's input waited for that hand-over and back. Only the
 * hash is remembered, never a verdict: each request still reads the token (revoked, expired). */
const recentHashes = new Map<string, string>()
/** A handful of clients' tokens at once; past it the oldest is forgotten. */
const RECENT_HASHES_MAX = 256

async function bearerHash(secret: string): Promise<string> {
  const known = recentHashes.get(secret)
  if (known !== undefined) return known
  const hash = await hashSecret(secret)
  if (recentHashes.size >= RECENT_HASHES_MAX) recentHashes.delete(recentHashes.keys().next().value!)
  recentHashes.set(secret, hash)
  return hash
}

/** The authority of a token by its secret (what a request's bearer carries); stored hashed. */
export async function authenticateSecret(db: Database, secret: string, now = Date.now()): Promise<Authority | undefined> {
  return authorityOf(db, eq(tokens.secretHash, await bearerHash(secret)), now)
}

async function authorityOf(db: Database, which: SQL, now: number): Promise<Authority | undefined> {
  // One round trip for the token and its grants (every request pays it); sessions only if scoped.
  const rows = await db
    .select({ id: tokens.id, allSessions: tokens.allSessions, expiresAt: tokens.expiresAt, grant: tokenGrants.grant })
    .from(tokens)
    .leftJoin(tokenGrants, eq(tokenGrants.tokenId, tokens.id))
    .where(and(which, isNull(tokens.revokedAt)))
  const token = rows[0]
  if (!token || (token.expiresAt !== null && token.expiresAt <= now)) return undefined
  const sessionRows = token.allSessions
    ? []
    : await db.select({ sessionId: tokenSessions.sessionId }).from(tokenSessions).where(eq(tokenSessions.tokenId, token.id))
  return {
    tokenId: token.id,
    grants: new Set(rows.flatMap((r) => (r.grant === null ? [] : [r.grant as Grant]))),
    sessions: token.allSessions ? 'all' : new Set(sessionRows.map((r) => r.sessionId)),
  }
}
