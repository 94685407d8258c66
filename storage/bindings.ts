/**
 * Which workspace a session is bound to. A session belongs to a workspace only if the workspace
 * lists it (workspace_sessions) **and** the session's cwd canonicalizes to the workspace's path
 * (which must itself still be canonical).
 * The caller supplies the canonicalization: the sidecar passes realpath (it holds the filesystem),
 * the API compares the stored canonical strings. Runtime-neutral: no Node built-ins here.
 */
import { asc, eq } from 'drizzle-orm'
import { sessions, workspaces, workspaceSessions } from './tables.ts'
import type { Database } from './client.ts'

export type SessionRow = typeof sessions.$inferSelect
export type WorkspaceRow = typeof workspaces.$inferSelect

export interface SessionBinding {
  session: SessionRow
  /** The bound workspace, with the canonical root the comparison used; null when none. */
  workspace: (WorkspaceRow & { root: string }) | null
}

/** Canonical form of a path, or undefined when it cannot be resolved (gone, unreadable). */
export type Canonicalize = (path: string) => Promise<string | undefined>

const asStored: Canonicalize = async (path) => path

/** The session and its bound workspace; undefined when the session does not exist. */
export async function sessionWorkspace(
  db: Database,
  sessionId: string,
  canonicalize: Canonicalize = asStored,
): Promise<SessionBinding | undefined> {
  const [session] = await db.select().from(sessions).where(eq(sessions.id, sessionId)).limit(1)
  if (!session) return undefined
  const listed = await db
    .select({ workspace: workspaces })
    .from(workspaceSessions)
    .innerJoin(workspaces, eq(workspaces.id, workspaceSessions.workspaceId))
    .where(eq(workspaceSessions.sessionId, sessionId))
    .orderBy(asc(workspaces.position), asc(workspaces.id))
  if (listed.length === 0) return { session, workspace: null }
  const cwd = await canonicalize(session.cwd)
  if (cwd === undefined) return { session, workspace: null }
  for (const { workspace } of listed) {
    // The registered directory must still be itself: a root since replaced by a symlink (or
    // moved away) binds nothing, whatever it points to now.
    const root = await canonicalize(workspace.path)
    if (root === workspace.path && root === cwd) return { session, workspace: { ...workspace, root } }
  }
  return { session, workspace: null }
}
