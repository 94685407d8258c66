/**
 * EventSource tickets. A browser's EventSource cannot send an Authorization header, and the
 * long-lived token must never appear in a URL. So a token holder mints a ticket for one stream
 * path; the ticket is accepted as `?ticket=` on that exact path, once, within TICKET_TTL_MS, and
 * carries the minting token's own authority (revoking the token voids its tickets). A request
 * refused for any reason (a bad query, a bad Last-Event-ID) leaves the ticket unspent. Which paths
 * take tickets is the API's to say (api/stream-routes.ts: every SSE route, read from the routes):
 * it asks `mintTicket` only for one of them.
 */
import { and, eq, gt, isNull, lt } from 'drizzle-orm'
import { TICKET_TTL_MS } from '../schema/limits.ts'
import { streamTickets } from './tables.ts'
import type { Database } from './client.ts'
import { hashSecret, randomSecret } from '../common/crypto.ts'

/** Mints a ticket for `path` (an SSE route's path: the caller checked). */
export async function mintTicket(
  db: Database,
  tokenId: string,
  path: string,
  now = Date.now(),
): Promise<{ ticket: string; expiresAt: number }> {
  const ticket = randomSecret('tkt')
  const expiresAt = now + TICKET_TTL_MS
  await db.delete(streamTickets).where(lt(streamTickets.expiresAt, now))
  await db.insert(streamTickets).values({ secretHash: await hashSecret(ticket), tokenId, path, expiresAt })
  return { ticket, expiresAt }
}

/** The conditions under which a ticket opens `path` now: this path, not used, not expired. */
async function usable(ticket: string, path: string, now: number) {
  return and(
    eq(streamTickets.secretHash, await hashSecret(ticket)),
    eq(streamTickets.path, path),
    isNull(streamTickets.usedAt),
    gt(streamTickets.expiresAt, now),
  )
}

/** Checks a ticket for `path` without spending it; returns the minting token's id, or undefined
 * (unknown, used, expired, other path). A request is authorized by this and spends the ticket
 * with `redeemTicket` only once it passed every check (guard.ts `openStream`). */
export async function ticketHolder(db: Database, ticket: string, path: string, now = Date.now()): Promise<string | undefined> {
  const [row] = await db
    .select({ tokenId: streamTickets.tokenId })
    .from(streamTickets)
    .where(await usable(ticket, path, now))
    .limit(1)
  return row?.tokenId
}

/** Spends a ticket for `path` in one statement (of two requests with one ticket, exactly one
 * spends it); returns the minting token's id, or undefined (unknown, used, expired, other path). */
export async function redeemTicket(db: Database, ticket: string, path: string, now = Date.now()): Promise<string | undefined> {
  const [row] = await db
    .update(streamTickets)
    .set({ usedAt: now })
    .where(await usable(ticket, path, now))
    .returning({ tokenId: streamTickets.tokenId })
  return row?.tokenId
}
