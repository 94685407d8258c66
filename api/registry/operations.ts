/**
 * The registry operations (docs/architecture.md, "Workspaces and sessions"): workspaces over
 * canonical directories, sessions that join the workspace owning their canonical cwd, the user's
 * orders and the archive set.
 * Paths are canonicalized by the sidecar (the API has no filesystem); each mutation is one
 * `mutate` transaction with its watch increments.
 */
import { and, eq, sql } from 'drizzle-orm'
import { TermkeepError } from '../../schema/errors.ts'
import { MAX_WORKSPACE_TITLE_CHARS } from '../../schema/limits.ts'
import { archivedSessions, sessions, workspaces, workspaceSessions } from '../../schema/tables.ts'
import { titleFrom } from '../../schema/wire/common.ts'
import type { Session, Workspace } from '../../schema/wire/registry.ts'
import type { Database } from '../../storage/client.ts'
import { randomId } from '../auth/secrets.ts'
import type { SidecarClient } from '../sidecar-client.ts'
import {
  appendEvent,
  archivedIds,
  frontPosition,
  listedSessionIds,
  moveBefore,
  mutate,
  requireWorkspace,
  sessionById,
  setSessionOrder,
  setWorkspaceOrder,
  touchWorkspace,
  workspaceById,
  workspaceByPath,
  workspaceOrder,
  type Tx,
} from './store.ts'

/** The canonical directory for `path`, or a typed 400 (503 when the sidecar is away). */
export async function canonicalDirectory(sidecar: SidecarClient, path: string): Promise<string> {
  const canonical = await sidecar.canonicalize(path)
  if (canonical.kind !== 'directory') {
    throw new TermkeepError('workspace/invalid-path', `not a directory: ${path}`, { path, reason: 'not-directory' })
  }
  return canonical.path
}

/** Pure: the default title, the last path segment (the root's own spelling for a root), as a
 * valid title: control characters replaced, cut so that a " (n)" suffix still fits. */
export function defaultTitle(path: string, n = 1): string {
  const segments = path.split(/[\\/]+/).filter((s) => s.length > 0)
  const suffix = n > 1 ? ` (${n})` : ''
  return titleFrom(segments.at(-1) ?? path, MAX_WORKSPACE_TITLE_CHARS - suffix.length, 'workspace') + suffix
}

async function titleTaken(tx: Tx, title: string, exceptId?: string): Promise<boolean> {
  const [row] = await tx.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.title, title)).limit(1)
  return row !== undefined && row.id !== exceptId
}

function nameConflict(title: string): TermkeepError {
  return new TermkeepError('workspace/name-conflict', `a workspace is already titled "${title}"`, { name: title })
}

export async function createWorkspace(
  db: Database,
  sidecar: SidecarClient,
  input: { path: string; title?: string },
): Promise<{ workspace: Workspace; created: boolean }> {
  const path = await canonicalDirectory(sidecar, input.path)
  return mutate(db, async (tx) => {
    const existing = await workspaceByPath(tx, path)
    if (existing) return { workspace: existing, created: false }
    let title = input.title ?? defaultTitle(path)
    if (input.title !== undefined) {
      if (await titleTaken(tx, title)) throw nameConflict(title)
    } else {
      // A default title yields to an existing one: "src", "src (2)", …
      for (let n = 2; await titleTaken(tx, title); n++) title = defaultTitle(path, n)
    }
    const id = randomId('ws')
    const now = Date.now()
    await tx.insert(workspaces).values({ id, path, title, position: await frontPosition(tx, 'workspaces'), createdAt: now, updatedAt: now })
    // Sessions already recorded in this directory join it, newest first.
    const orphans = await tx
      .select({ id: sessions.id })
      .from(sessions)
      .where(and(eq(sessions.cwd, path), sql`${sessions.id} NOT IN (SELECT session_id FROM workspace_sessions)`))
      .orderBy(sql`${sessions.createdAt} DESC`, sessions.id)
    for (const [index, orphan] of orphans.entries()) {
      await tx.insert(workspaceSessions).values({ workspaceId: id, sessionId: orphan.id, position: index })
    }
    const workspace = (await workspaceById(tx, id))!
    await appendEvent(tx, { kind: 'upsert', payload: { workspace } })
    await appendEvent(tx, { kind: 'order', payload: { workspaceIds: await workspaceOrder(tx) } })
    return { workspace, created: true }
  })
}

export async function resolveWorkspace(db: Database, sidecar: SidecarClient, path: string): Promise<Workspace | null> {
  const canonical = await canonicalDirectory(sidecar, path)
  return (await workspaceByPath(db, canonical)) ?? null
}

export async function renameWorkspace(db: Database, id: string, title: string): Promise<Workspace> {
  return mutate(db, async (tx) => {
    const current = await requireWorkspace(tx, id)
    if (current.title === title) return current
    if (await titleTaken(tx, title, id)) throw nameConflict(title)
    await tx.update(workspaces).set({ title, updatedAt: Date.now() }).where(eq(workspaces.id, id))
    const workspace = (await workspaceById(tx, id))!
    await appendEvent(tx, { kind: 'upsert', payload: { workspace } })
    return workspace
  })
}

/** Removes the registration only: sessions stay recorded, nothing on disk is touched. */
export async function deleteWorkspace(db: Database, id: string): Promise<void> {
  await mutate(db, async (tx) => {
    await requireWorkspace(tx, id)
    await tx.delete(workspaceSessions).where(eq(workspaceSessions.workspaceId, id))
    await tx.delete(workspaces).where(eq(workspaces.id, id))
    await appendEvent(tx, { kind: 'remove', payload: { workspaceId: id } })
  })
}

export async function moveWorkspace(db: Database, id: string, beforeId: string | undefined): Promise<string[]> {
  return mutate(db, async (tx) => {
    await requireWorkspace(tx, id)
    const order = await workspaceOrder(tx)
    const next = moveBefore(order, id, beforeId)
    if (!next) throw new TermkeepError('workspace/move-invalid', `no workspace ${beforeId} to move before`, { beforeId })
    if (next.join('\0') === order.join('\0')) return order
    await setWorkspaceOrder(tx, next)
    await appendEvent(tx, { kind: 'order', payload: { workspaceIds: next } })
    return next
  })
}

export async function moveSession(db: Database, workspaceId: string, sessionId: string, beforeId: string | undefined): Promise<Workspace> {
  return mutate(db, async (tx) => {
    const workspace = await requireWorkspace(tx, workspaceId)
    // Only members move; anchors must be members too (hidden, stale listings are pruned here).
    const next = moveBefore(workspace.sessionIds, sessionId, beforeId)
    if (!next) {
      throw new TermkeepError('workspace/move-invalid', `session ${sessionId} or anchor ${beforeId ?? '(end)'} is not in workspace ${workspaceId}`, {
        sessionId,
        beforeId,
      })
    }
    const listed = await listedSessionIds(tx, workspaceId)
    const stale = listed.filter((id) => !workspace.sessionIds.includes(id))
    for (const id of stale) {
      await tx.delete(workspaceSessions).where(and(eq(workspaceSessions.workspaceId, workspaceId), eq(workspaceSessions.sessionId, id)))
    }
    if (stale.length === 0 && next.join('\0') === workspace.sessionIds.join('\0')) return workspace
    await setSessionOrder(tx, workspaceId, next)
    await touchWorkspace(tx, workspaceId)
    const updated = (await workspaceById(tx, workspaceId))!
    await appendEvent(tx, { kind: 'upsert', payload: { workspace: updated } })
    return updated
  })
}

/**
 * Records a session. A new one joins (prepended) the workspace owning its canonical cwd. The same
 * id again with the same cwd returns the record unchanged; with another cwd it is a conflict.
 */
export async function createSession(
  db: Database,
  sidecar: SidecarClient,
  input: { id?: string; cwd: string; title?: string },
): Promise<{ session: Session; created: boolean }> {
  const cwd = await canonicalDirectory(sidecar, input.cwd)
  const id = input.id ?? randomId('ses')
  return mutate(db, async (tx) => {
    const existing = await sessionById(tx, id)
    if (existing) {
      if (existing.cwd !== cwd) {
        throw new TermkeepError('session/conflict', `session ${id} is already recorded with another cwd`, { sessionId: id })
      }
      return { session: existing, created: false }
    }
    await tx.insert(sessions).values({ id, cwd, title: input.title ?? null, createdAt: Date.now() })
    const owner = await workspaceByPath(tx, cwd)
    if (owner) {
      await tx.insert(workspaceSessions).values({ workspaceId: owner.id, sessionId: id, position: await frontPosition(tx, { workspaceId: owner.id }) })
      await touchWorkspace(tx, owner.id)
      await appendEvent(tx, { kind: 'upsert', payload: { workspace: (await workspaceById(tx, owner.id))! } })
    }
    return { session: (await sessionById(tx, id))!, created: true }
  })
}

/** Adds to the global archive set; the session keeps its workspace slot. No-op when archived. */
export async function archiveSession(db: Database, id: string): Promise<string[]> {
  return mutate(db, async (tx) => {
    if (!(await sessionById(tx, id))) throw new TermkeepError('session/not-found', `no session ${id}`)
    const [already] = await tx.select().from(archivedSessions).where(eq(archivedSessions.sessionId, id)).limit(1)
    if (already) return archivedIds(tx)
    await tx.insert(archivedSessions).values({ sessionId: id, archivedAt: Date.now() })
    const archived = await archivedIds(tx)
    await appendEvent(tx, { kind: 'archived', payload: { archivedSessionIds: archived } })
    return archived
  })
}

/** Removes from the archive set; the untouched slot restores the old position. */
export async function unarchiveSession(db: Database, id: string): Promise<string[]> {
  return mutate(db, async (tx) => {
    const removed = await tx.delete(archivedSessions).where(eq(archivedSessions.sessionId, id)).returning()
    const archived = await archivedIds(tx)
    if (removed.length > 0) await appendEvent(tx, { kind: 'archived', payload: { archivedSessionIds: archived } })
    return archived
  })
}
