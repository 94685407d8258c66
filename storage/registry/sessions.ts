/**
 * Listing sessions (`GET /v1/sessions`): every recorded session the token may touch, newest first,
 * a page at a time, with the same fields as `GET /v1/sessions/:sid` (membership: listed by a
 * workspace *and* its cwd equal to that workspace's path). The filter `workspace=none` gives the
 * sessions that stand alone, which the workspace listing cannot show.
 */
import { and, desc, eq, inArray, isNull, lt, or, sql, type SQL } from 'drizzle-orm'
import { MAX_SESSION_PAGE } from '../../schema/limits.ts'
import { sessions } from '../tables.ts'
import { NO_WORKSPACE, type Session, type SessionList, type SessionListQuery } from '../../schema/wire/registry.ts'
import type { Authority } from '../authority.ts'
import type { Queryable } from './workspaces.ts'

/**
 * The workspace a session belongs to (its listing whose path is the session's cwd), or NULL. The
 * outer columns are spelled out: drizzle writes a bare `"id"` for `${sessions.id}` in a one-table
 * select, which inside the subquery would name the workspace's id instead.
 */
const memberOf = sql<string | null>`(
  SELECT ws.workspace_id FROM workspace_sessions ws JOIN workspaces w ON w.id = ws.workspace_id
  WHERE ws.session_id = "sessions"."id" AND w.path = "sessions"."cwd" LIMIT 1)`
const isArchived = sql<number>`EXISTS (SELECT 1 FROM archived_sessions a WHERE a.session_id = "sessions"."id")`

/** Pure: a page's `next` from its last session, and back. */
export const cursorOf = (session: Pick<Session, 'createdAt' | 'id'>) => `${session.createdAt}.${session.id}`
function after(cursor: string): SQL | undefined {
  const dot = cursor.indexOf('.')
  const createdAt = Number(cursor.slice(0, dot))
  const id = cursor.slice(dot + 1)
  return or(lt(sessions.createdAt, createdAt), and(eq(sessions.createdAt, createdAt), lt(sessions.id, id)))
}

export async function listSessions(q: Queryable, authority: Authority, query: SessionListQuery): Promise<SessionList> {
  if (authority.sessions !== 'all' && authority.sessions.size === 0) return { sessions: [], next: null }
  const limit = query.limit ?? MAX_SESSION_PAGE
  const where = and(
    authority.sessions === 'all' ? undefined : inArray(sessions.id, [...authority.sessions]),
    query.workspace === undefined ? undefined : query.workspace === NO_WORKSPACE ? isNull(memberOf) : eq(memberOf, query.workspace),
    query.cursor === undefined ? undefined : after(query.cursor),
  )
  // One row more than the page says whether another page follows.
  const rows = await q
    .select({
      id: sessions.id,
      cwd: sessions.cwd,
      title: sessions.title,
      name: sessions.name,
      createdAt: sessions.createdAt,
      host: sessions.hostId,
      workspaceId: memberOf,
      archived: isArchived,
    })
    .from(sessions)
    .where(where)
    .orderBy(desc(sessions.createdAt), desc(sessions.id))
    .limit(limit + 1)
  const page = rows.slice(0, limit).map((row): Session => ({ ...row, archived: Boolean(row.archived) }))
  return { sessions: page, next: rows.length > limit ? cursorOf(page[page.length - 1]) : null }
}

export async function sessionExists(db: Queryable, id: string): Promise<boolean> {
  return (await db.select({ id: sessions.id }).from(sessions).where(eq(sessions.id, id)).limit(1)).length > 0
}
