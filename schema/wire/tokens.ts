/**
 * Token management (grant `admin`) and EventSource tickets (any valid token).
 *
 *   POST   /v1/tokens      CreateToken → TokenCreated (the secret, shown once)
 *   GET    /v1/tokens                  → TokenList (never a secret or its hash)
 *   DELETE /v1/tokens/:id              → {revoked: true}
 *   POST   /v1/tickets     TicketRequest → Ticket
 */
import * as v from 'valibot'
import { GRANTS } from '../grants.ts'
import { MAX_PATH_CHARS, MAX_TIMESTAMP_MS, MAX_TOKEN_NAME_CHARS, MAX_TOKEN_SESSIONS, OBSERVE_MAX_DECLARED_ENV } from '../limits.ts'
import { EnvironmentName } from './observation.ts'
import { SessionId, titleSchema } from './common.ts'

export const Grant = v.picklist(GRANTS)

/** Pure: `admin` manages every token, so only a token bound to all sessions may hold it. */
export function adminBoundToSessions(grants: readonly string[], sessions: 'all' | readonly string[]): boolean {
  return grants.includes('admin') && sessions !== 'all'
}
export const ADMIN_NEEDS_ALL_SESSIONS = 'the admin grant manages every token: give it only with sessions "all"'

export const CreateToken = v.pipe(
  v.object({
    name: titleSchema(MAX_TOKEN_NAME_CHARS, 'token names'),
    grants: v.pipe(v.array(Grant), v.minLength(1, 'give at least one grant')),
    sessions: v.union([v.literal('all'), v.pipe(v.array(SessionId), v.minLength(1), v.maxLength(MAX_TOKEN_SESSIONS))]),
    /** Absolute expiry, epoch milliseconds. */
    expiresAt: v.optional(
      v.pipe(
        v.number(),
        v.safeInteger(),
        v.minValue(0),
        v.maxValue(MAX_TIMESTAMP_MS, 'expiresAt is at most 9999-12-31 (epoch milliseconds)'),
      ),
    ),
    /** Environment variables terminal observation may read or root paths at (seed 004's
     * `requiredEnvironmentVariables`); any other name is 403 `observe/undeclared`. */
    observeEnvironment: v.optional(
      v.pipe(
        v.array(EnvironmentName),
        v.maxLength(OBSERVE_MAX_DECLARED_ENV, `observeEnvironment declares at most ${OBSERVE_MAX_DECLARED_ENV} names`),
      ),
    ),
  }),
  v.check((spec) => !adminBoundToSessions(spec.grants, spec.sessions), ADMIN_NEEDS_ALL_SESSIONS),
)
export type CreateToken = v.InferOutput<typeof CreateToken>

export const TokenRecord = v.object({
  id: v.string(),
  name: v.string(),
  grants: v.array(Grant),
  sessions: v.union([v.literal('all'), v.array(v.string())]),
  createdAt: v.number(),
  expiresAt: v.nullable(v.number()),
  /** Declared environment variable names for terminal observation, sorted. */
  observeEnvironment: v.array(v.string()),
})

export type TokenRecord = v.InferOutput<typeof TokenRecord>

export const TokenCreated = v.object({ token: TokenRecord, secret: v.string() })
export const TokenList = v.object({ tokens: v.array(TokenRecord) })
export const TokenParams = v.object({ id: v.pipe(v.string(), v.regex(/^[\w-]{1,128}$/, 'token ids are 1–128 of [A-Za-z0-9_-]')) })
export const Revoked = v.object({ revoked: v.literal(true) })

export const TicketRequest = v.object({
  /** The exact SSE path the ticket opens (no query string), e.g. /v1/workspaces/watch. */
  path: v.pipe(v.string(), v.startsWith('/', 'an absolute request path'), v.maxLength(MAX_PATH_CHARS)),
})
export const Ticket = v.object({ ticket: v.string(), path: v.string(), expiresAt: v.number() })
