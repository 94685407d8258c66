/**
 * Token records: creation (the secret is shown once, only its hash is stored), the local admin
 * token that `npm start` provisions, and lookup by secret.
 */
import { and, eq, isNull } from 'drizzle-orm'
import { GRANTS, type Grant } from '../../schema/grants.ts'
import { tokenGrants, tokens, tokenSessions } from '../../schema/tables.ts'
import type { Database } from '../../storage/client.ts'
import { hashSecret, randomId, randomSecret } from './secrets.ts'

export interface TokenSpec {
  name: string
  grants: readonly Grant[]
  /** 'all' or the session ids the token may touch. */
  sessions: 'all' | readonly string[]
  expiresAt?: number
}

export interface TokenRecord {
  id: string
  name: string
  grants: Grant[]
  sessions: 'all' | string[]
  createdAt: number
  expiresAt: number | null
}

export const LOCAL_ADMIN_TOKEN_NAME = 'local-admin'
export const ENV_ADMIN_TOKEN_NAME = 'env-admin'

/** Stores a token under the given secret (generated when absent) and returns the secret once. */
export async function createToken(
  db: Database,
  spec: TokenSpec,
  secret = randomSecret('tk'),
): Promise<{ token: TokenRecord; secret: string }> {
  const id = randomId('tok')
  const createdAt = Date.now()
  const allSessions = spec.sessions === 'all'
  const grants = [...new Set(spec.grants)]
  const sessionIds = allSessions ? [] : [...new Set(spec.sessions)]
  await db.batch([
    db.insert(tokens).values({
      id,
      name: spec.name,
      secretHash: await hashSecret(secret),
      allSessions,
      createdAt,
      expiresAt: spec.expiresAt ?? null,
    }),
    ...grants.map((grant) => db.insert(tokenGrants).values({ tokenId: id, grant })),
    ...sessionIds.map((sessionId) => db.insert(tokenSessions).values({ tokenId: id, sessionId })),
  ])
  return {
    token: { id, name: spec.name, grants, sessions: allSessions ? 'all' : sessionIds, createdAt, expiresAt: spec.expiresAt ?? null },
    secret,
  }
}

/**
 * Makes sure an admin token exists. With `envSecret` (TERMKEEP_ADMIN_TOKEN) that exact secret is
 * the admin token; otherwise a local admin token is created once. Returns the secret only when it
 * was newly created here, so callers print it exactly once.
 */
export async function ensureAdminToken(db: Database, envSecret?: string): Promise<{ created: boolean; secret?: string }> {
  const name = envSecret ? ENV_ADMIN_TOKEN_NAME : LOCAL_ADMIN_TOKEN_NAME
  if (envSecret) {
    const hash = await hashSecret(envSecret)
    const same = await db.select({ id: tokens.id }).from(tokens).where(eq(tokens.secretHash, hash)).limit(1)
    if (same.length > 0) return { created: false }
    await db.delete(tokens).where(eq(tokens.name, ENV_ADMIN_TOKEN_NAME))
    await createToken(db, { name, grants: GRANTS, sessions: 'all' }, envSecret)
    return { created: false }
  }
  const existing = await db
    .select({ id: tokens.id })
    .from(tokens)
    .where(and(eq(tokens.name, name), isNull(tokens.revokedAt)))
    .limit(1)
  if (existing.length > 0) return { created: false }
  const { secret } = await createToken(db, { name, grants: GRANTS, sessions: 'all' })
  return { created: true, secret }
}
