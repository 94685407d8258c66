/**
 * Token records: creation (the secret is shown once, only its hash is stored), the local admin
 * token that `npm start` provisions, and lookup by secret.
 */
import { and, asc, eq, gt, inArray, isNull, or } from 'drizzle-orm'
import { GRANTS, type Grant } from '../schema/grants.ts'
import { tokenGrants, tokenObserveEnv, tokens, tokenSessions } from './tables.ts'
import type { Database } from './client.ts'
import { hashSecret, randomId, randomSecret } from '../common/crypto.ts'

export interface TokenSpec {
  name: string
  grants: readonly Grant[]
  /** 'all' or the session ids the token may touch. */
  sessions: 'all' | readonly string[]
  expiresAt?: number
  /** Environment variable names terminal observation may read (none when absent). */
  observeEnvironment?: readonly string[]
}

export interface TokenRecord {
  id: string
  name: string
  grants: Grant[]
  sessions: 'all' | string[]
  createdAt: number
  expiresAt: number | null
  observeEnvironment: string[]
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
  const observeEnvironment = [...new Set(spec.observeEnvironment ?? [])].sort()
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
    ...observeEnvironment.map((name) => db.insert(tokenObserveEnv).values({ tokenId: id, name })),
  ])
  return {
    token: {
      id,
      name: spec.name,
      grants,
      sessions: allSessions ? 'all' : sessionIds,
      createdAt,
      expiresAt: spec.expiresAt ?? null,
      observeEnvironment,
    },
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

/** Active tokens (neither revoked nor expired), oldest first, without secrets. */
export async function listTokens(db: Database, now = Date.now()): Promise<TokenRecord[]> {
  const rows = await db
    .select()
    .from(tokens)
    .where(and(isNull(tokens.revokedAt), or(isNull(tokens.expiresAt), gt(tokens.expiresAt, now))))
    .orderBy(asc(tokens.createdAt), asc(tokens.id))
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const [grantRows, sessionRows, envRows] = [
    await db.select().from(tokenGrants).where(inArray(tokenGrants.tokenId, ids)),
    await db.select().from(tokenSessions).where(inArray(tokenSessions.tokenId, ids)),
    await db.select().from(tokenObserveEnv).where(inArray(tokenObserveEnv.tokenId, ids)).orderBy(asc(tokenObserveEnv.name)),
  ]
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    grants: grantRows.filter((g) => g.tokenId === row.id).map((g) => g.grant as Grant),
    sessions: row.allSessions ? 'all' : sessionRows.filter((s) => s.tokenId === row.id).map((s) => s.sessionId),
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    observeEnvironment: envRows.filter((e) => e.tokenId === row.id).map((e) => e.name),
  }))
}

/** The environment variable names a token declared for terminal observation. */
export async function observedEnvironmentNames(db: Database, tokenId: string): Promise<string[]> {
  const rows = await db.select({ name: tokenObserveEnv.name }).from(tokenObserveEnv).where(eq(tokenObserveEnv.tokenId, tokenId))
  return rows.map((r) => r.name).sort()
}

/** Revokes a token (its tickets die with it); false when unknown or already revoked. */
export async function revokeToken(db: Database, id: string, now = Date.now()): Promise<boolean> {
  const revoked = await db
    .update(tokens)
    .set({ revokedAt: now })
    .where(and(eq(tokens.id, id), isNull(tokens.revokedAt)))
    .returning({ id: tokens.id })
  return revoked.length > 0
}
