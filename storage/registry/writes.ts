/**
 * The registry's writes, each inside a `mutate` transaction (workspaces.ts) that also appends the
 * watch increments; what they mean and who may do them is api/registry/operations.ts.
 */
import { and, eq, inArray, isNull, or, sql } from 'drizzle-orm'
import { archivedSessions, sessions, workspaces, workspaceSessions } from '../tables.ts'
import { frontPosition, type Tx } from './workspaces.ts'

/** Whether another workspace (not `exceptId`) has this title. */
export async function titleTaken(tx: Tx, title: string, exceptId?: string): Promise<boolean> {
  const [row] = await tx.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.title, title)).limit(1)
  return row !== undefined && row.id !== exceptId
}

/** A new workspace of `hostId`, first in the order; sessions already recorded in its directory on
 * that host (or on none: recorded before hosts) join it, newest first. */
export async function insertWorkspace(
  tx: Tx,
  workspace: { id: string; path: string; title: string; hostId: string | null },
): Promise<void> {
  const now = Date.now()
  await tx.insert(workspaces).values({ ...workspace, position: await frontPosition(tx, 'workspaces'), createdAt: now, updatedAt: now })
  const onHost = workspace.hostId === null ? undefined : or(eq(sessions.hostId, workspace.hostId), isNull(sessions.hostId))
  const orphans = await tx
    .select({ id: sessions.id })
    .from(sessions)
    .where(and(eq(sessions.cwd, workspace.path), onHost, sql`${sessions.id} NOT IN (SELECT session_id FROM workspace_sessions)`))
    .orderBy(sql`${sessions.createdAt} DESC`, sessions.id)
  for (const [index, orphan] of orphans.entries()) {
    await tx.insert(workspaceSessions).values({ workspaceId: workspace.id, sessionId: orphan.id, position: index })
  }
}

/** A workspace recorded before workspaces had hosts becomes `hostId`'s, the first host named with it. */
export async function claimWorkspace(tx: Tx, id: string, hostId: string): Promise<void> {
  await tx
    .update(workspaces)
    .set({ hostId, updatedAt: Date.now() })
    .where(and(eq(workspaces.id, id), isNull(workspaces.hostId)))
}

export async function setWorkspaceTitle(tx: Tx, id: string, title: string): Promise<void> {
  await tx.update(workspaces).set({ title, updatedAt: Date.now() }).where(eq(workspaces.id, id))
}

/** The registration and its listing; the sessions stay recorded. */
export async function deleteWorkspace(tx: Tx, id: string): Promise<void> {
  await tx.delete(workspaceSessions).where(eq(workspaceSessions.workspaceId, id))
  await tx.delete(workspaces).where(eq(workspaces.id, id))
}

/** Takes sessions off a workspace's listing. */
export async function unlistSessions(tx: Tx, workspaceId: string, sessionIds: readonly string[]): Promise<void> {
  if (sessionIds.length === 0) return
  await tx
    .delete(workspaceSessions)
    .where(and(eq(workspaceSessions.workspaceId, workspaceId), inArray(workspaceSessions.sessionId, [...sessionIds])))
}

/** A new session record, listed first in `workspaceId` when one owns its cwd. */
export async function insertSession(
  tx: Tx,
  session: { id: string; cwd: string; title: string | null; hostId: string | null },
  workspaceId?: string,
): Promise<void> {
  await tx.insert(sessions).values({ ...session, createdAt: Date.now() })
  if (workspaceId === undefined) return
  await tx.insert(workspaceSessions).values({ workspaceId, sessionId: session.id, position: await frontPosition(tx, { workspaceId }) })
}

/** Adds the session to the archive set; false when it was there already. */
export async function archive(tx: Tx, sessionId: string): Promise<boolean> {
  const [already] = await tx.select().from(archivedSessions).where(eq(archivedSessions.sessionId, sessionId)).limit(1)
  if (already) return false
  await tx.insert(archivedSessions).values({ sessionId, archivedAt: Date.now() })
  return true
}

/** Takes the session out of the archive set; false when it was not in it. */
export async function unarchive(tx: Tx, sessionId: string): Promise<boolean> {
  return (await tx.delete(archivedSessions).where(eq(archivedSessions.sessionId, sessionId)).returning()).length > 0
}
