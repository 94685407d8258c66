/**
 * The registry operations (docs/architecture.md, "Workspaces and sessions"): workspaces over
 * canonical directories, sessions that join the workspace owning their canonical cwd, the user's
 * orders and the archive set.
 * Paths are canonicalized by the sidecar (the API has no filesystem); each mutation is one
 * `mutate` transaction with its watch increments. Each takes the caller's authority and applies
 * the confinement of scope.ts (docs/security-workspaces.md): what it cannot see is as if absent.
 */
import { TermkeepError } from '../../schema/errors.ts'
import { MAX_WORKSPACE_TITLE_CHARS } from '../../schema/limits.ts'
import { titleFrom } from '../../schema/wire/common.ts'
import type { CreateSession, Session, Workspace } from '../../schema/wire/registry.ts'
import type { Database } from '../../storage/client.ts'
import type { Authority } from '../../storage/authority.ts'
import { randomId } from '../../common/crypto.ts'
import type { Fleet, Placement } from '../hosts/fleet.ts'
import type { SidecarClient } from '../sidecar-client.ts'
import {
  appendEvent,
  archivedIds,
  listedSessionIds,
  listWorkspaces,
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
  type Queryable,
} from '../../storage/registry/workspaces.ts'
import { claimSessionName } from '../../storage/registry/names.ts'
import * as writes from '../../storage/registry/writes.ts'
import { placeDirectory, placeSession } from './placement.ts'
import { mayRegister, scopeOrder, scopeWorkspace, seesWorkspace } from './scope.ts'

/** The canonical directory for `path`, or a typed 400 (503 when the sidecar is away). */
export async function canonicalDirectory(sidecar: SidecarClient, path: string): Promise<string> {
  const canonical = await sidecar.canonicalize(path)
  if (canonical.kind !== 'directory') {
    throw new TermkeepError('workspace/invalid-path', `not a directory: ${path}`, { path, reason: 'not-directory' })
  }
  return canonical.path
}

/** A host's answer about a path (missing, not a directory, unreadable), as opposed to a path
 * refused for its spelling alone (relative) or a sidecar that did not answer. */
function isHostAnswer(error: unknown): boolean {
  return error instanceof TermkeepError && error.code === 'workspace/invalid-path' && error.details.reason !== 'relative'
}

/**
 * The workspace owning `path` if `authority` can see it, else undefined: for one that cannot
 * register directories, a missing path, a file, a directory no workspace owns and one owned by a
 * workspace it cannot see are all the same answer, so it learns nothing about the host.
 */
async function visibleOwner(
  db: Queryable,
  { sidecar, hostId }: Placement,
  authority: Authority,
  path: string,
): Promise<Workspace | undefined> {
  let canonical: string
  try {
    canonical = await canonicalDirectory(sidecar, path)
  } catch (error) {
    if (isHostAnswer(error)) return undefined
    throw error
  }
  const owner = await workspaceByPath(db, canonical, hostId)
  return owner && seesWorkspace(authority, owner) ? owner : undefined
}

/** The workspace `id` if `authority` can see it; `workspace/not-found` otherwise, alike. */
async function requireVisible(q: Queryable, authority: Authority, id: string): Promise<Workspace> {
  const workspace = await requireWorkspace(q, id)
  if (!seesWorkspace(authority, workspace)) throw new TermkeepError('workspace/not-found', `no workspace ${id}`, { workspaceId: id })
  return workspace
}

/** The ids of the workspaces `authority` can see, of `order` (every workspace, as stored). */
async function visibleIds(q: Queryable, authority: Authority, order: readonly string[]): Promise<Set<string>> {
  if (authority.sessions === 'all') return new Set(order)
  return new Set((await listWorkspaces(q)).workspaces.filter((w) => seesWorkspace(authority, w)).map((w) => w.id))
}

/** The typed refusal a CLI can explain: registering needs a token bound to all sessions. */
export const REGISTRATION_NEEDS_ALL_SESSIONS = 'workspaces:write on a token bound to all sessions'

function registrationRefused(path: string): TermkeepError {
  return new TermkeepError(
    'auth/forbidden',
    `registering ${path} as a workspace needs ${REGISTRATION_NEEDS_ALL_SESSIONS}; this token is bound to some sessions and gets back only a workspace that lists one of them`,
    { required: REGISTRATION_NEEDS_ALL_SESSIONS },
  )
}

/** Pure: the default title, the last path segment (the root's own spelling for a root), as a
 * valid title: control characters replaced, cut so that a " (n)" suffix still fits. */
export function defaultTitle(path: string, n = 1): string {
  const segments = path.split(/[\\/]+/).filter((s) => s.length > 0)
  const suffix = n > 1 ? ` (${n})` : ''
  return titleFrom(segments.at(-1) ?? path, MAX_WORKSPACE_TITLE_CHARS - suffix.length, 'workspace') + suffix
}

function nameConflict(title: string): TermkeepError {
  return new TermkeepError('workspace/name-conflict', `a workspace is already titled "${title}"`, { name: title })
}

/**
 * Registers the directory, or returns the workspace owning it, as the caller sees it. A token
 * that may not register (mayRegister) gets back only a workspace it can see; any other path is
 * the same 403. One that may is bound to all sessions, so it sees every workspace whole.
 */
export async function createWorkspace(
  db: Database,
  fleet: Fleet,
  authority: Authority,
  input: { path: string; title?: string; host?: string },
): Promise<{ workspace: Workspace; created: boolean }> {
  const placement = await placeDirectory(db, fleet, authority, input.host)
  if (!mayRegister(authority)) {
    const owner = await visibleOwner(db, placement, authority, input.path)
    if (!owner) throw registrationRefused(input.path)
    return { workspace: scopeWorkspace(authority, owner), created: false }
  }
  const { hostId } = placement
  const path = await canonicalDirectory(placement.sidecar, input.path)
  return mutate(db, async (tx) => {
    const existing = await workspaceByPath(tx, path, hostId)
    if (existing && (existing.host !== null || hostId === null)) return { workspace: existing, created: false }
    if (existing) {
      // Recorded before workspaces had hosts: it is this host's from now on.
      await writes.claimWorkspace(tx, existing.id, hostId!)
      const workspace = (await workspaceById(tx, existing.id))!
      await appendEvent(tx, { kind: 'upsert', payload: { workspace } })
      return { workspace, created: false }
    }
    let title = input.title ?? defaultTitle(path)
    if (input.title !== undefined) {
      if (await writes.titleTaken(tx, title)) throw nameConflict(title)
    } else {
      // A default title yields to an existing one (another host's same directory too): "src", "src (2)", …
      for (let n = 2; await writes.titleTaken(tx, title); n++) title = defaultTitle(path, n)
    }
    const id = randomId('ws')
    await writes.insertWorkspace(tx, { id, path, title, hostId })
    const workspace = (await workspaceById(tx, id))!
    await appendEvent(tx, { kind: 'upsert', payload: { workspace } })
    await appendEvent(tx, { kind: 'order', payload: { workspaceIds: await workspaceOrder(tx) } })
    return { workspace, created: true }
  })
}

/**
 * The workspace owning `path` on the host (`host`, else the only one), or null. Only a token that
 * may register directories (and so learns about them from POST /v1/workspaces anyway) is told
 * that a path is missing or not a directory (400); to any other, that is `null` like a directory
 * no workspace it sees owns.
 */
export async function resolveWorkspace(
  db: Database,
  fleet: Fleet,
  authority: Authority,
  { path, host }: { path: string; host?: string },
): Promise<Workspace | null> {
  const placement = await placeDirectory(db, fleet, authority, host)
  if (!mayRegister(authority)) {
    const owner = await visibleOwner(db, placement, authority, path)
    return owner ? scopeWorkspace(authority, owner) : null
  }
  const canonical = await canonicalDirectory(placement.sidecar, path)
  return (await workspaceByPath(db, canonical, placement.hostId)) ?? null
}

export async function renameWorkspace(db: Database, authority: Authority, id: string, title: string): Promise<Workspace> {
  return mutate(db, async (tx) => {
    const current = await requireVisible(tx, authority, id)
    if (current.title === title) return scopeWorkspace(authority, current)
    if (await writes.titleTaken(tx, title, id)) throw nameConflict(title)
    await writes.setWorkspaceTitle(tx, id, title)
    const workspace = (await workspaceById(tx, id))!
    await appendEvent(tx, { kind: 'upsert', payload: { workspace } })
    return scopeWorkspace(authority, workspace)
  })
}

/** Removes the registration only: sessions stay recorded, nothing on disk is touched. */
export async function deleteWorkspace(db: Database, authority: Authority, id: string): Promise<void> {
  await mutate(db, async (tx) => {
    await requireVisible(tx, authority, id)
    await writes.deleteWorkspace(tx, id)
    await appendEvent(tx, { kind: 'remove', payload: { workspaceId: id } })
  })
}

/** Moves a workspace before another (one the caller can see) or to the end; returns the order
 * of the workspaces the caller can see. */
export async function moveWorkspace(db: Database, authority: Authority, id: string, beforeId: string | undefined): Promise<string[]> {
  return mutate(db, async (tx) => {
    await requireVisible(tx, authority, id)
    const order = await workspaceOrder(tx)
    const visible = await visibleIds(tx, authority, order)
    const next = beforeId === undefined || visible.has(beforeId) ? moveBefore(order, id, beforeId) : undefined
    if (!next) throw new TermkeepError('workspace/move-invalid', `no workspace ${beforeId} to move before`, { beforeId })
    if (next.join('\0') !== order.join('\0')) {
      await setWorkspaceOrder(tx, next)
      await appendEvent(tx, { kind: 'order', payload: { workspaceIds: next } })
    }
    return scopeOrder(authority, next, visible)
  })
}

/** Moves a session (one the caller may touch) within a workspace it can see; anchors outside its
 * scope are answered like missing ones. */
export async function moveSession(
  db: Database,
  authority: Authority,
  workspaceId: string,
  sessionId: string,
  beforeId: string | undefined,
): Promise<Workspace> {
  return mutate(db, async (tx) => {
    const workspace = await requireVisible(tx, authority, workspaceId)
    const anchorHidden = beforeId !== undefined && authority.sessions !== 'all' && !authority.sessions.has(beforeId)
    // Only members move; anchors must be members too (hidden, stale listings are pruned here).
    const next = anchorHidden ? undefined : moveBefore(workspace.sessionIds, sessionId, beforeId)
    if (!next) {
      throw new TermkeepError(
        'workspace/move-invalid',
        `session ${sessionId} or anchor ${beforeId ?? '(end)'} is not in workspace ${workspaceId}`,
        {
          sessionId,
          beforeId,
        },
      )
    }
    const listed = await listedSessionIds(tx, workspaceId)
    const stale = listed.filter((id) => !workspace.sessionIds.includes(id))
    await writes.unlistSessions(tx, workspaceId, stale)
    if (stale.length === 0 && next.join('\0') === workspace.sessionIds.join('\0')) return scopeWorkspace(authority, workspace)
    await setSessionOrder(tx, workspaceId, next)
    await touchWorkspace(tx, workspaceId)
    const updated = (await workspaceById(tx, workspaceId))!
    await appendEvent(tx, { kind: 'upsert', payload: { workspace: updated } })
    return scopeWorkspace(authority, updated)
  })
}

function sessionRefused(cwd: string): TermkeepError {
  return new TermkeepError(
    'auth/forbidden',
    `a token bound to sessions records its session only in the directory of a workspace that lists one of its sessions; ${cwd} is not one`,
    { required: 'a cwd of a workspace this token can see' },
  )
}

/**
 * Records a session. A new one joins (prepended) the workspace owning its canonical cwd. The same
 * id again with the same cwd returns the record unchanged; with another cwd it is a conflict.
 * A session-bound token records only an id in its scope, and only in the directory of a workspace
 * it can see: never a directory of its choosing (standalone, or a workspace it cannot see), which
 * would make that directory's files its own to read.
 */
export async function createSession(
  db: Database,
  fleet: Fleet,
  authority: Authority,
  input: CreateSession,
): Promise<{ session: Session; created: boolean }> {
  const confined = authority.sessions !== 'all'
  if (confined) {
    if (input.id === undefined)
      throw new TermkeepError('auth/forbidden', 'a session-scoped token records only sessions it names (give an id in its scope)')
    if (!(authority.sessions as ReadonlySet<string>).has(input.id)) throw new TermkeepError('session/not-found', `no session ${input.id}`)
  }
  // The directory is canonicalized where it is: on the session's host.
  const { placement, workspace } = await placeSession(db, fleet, authority, input)
  const { hostId } = placement
  const asked = input.cwd ?? workspace!.path
  const cwd = await sessionDirectory(db, placement, authority, asked, workspace)
  if (cwd === undefined) throw sessionRefused(asked)
  const id = input.id ?? randomId('ses')
  return mutate(db, async (tx) => {
    // Checked again where it counts: the workspace may have gone since.
    const owner = await workspaceByPath(tx, cwd, hostId)
    if (confined && !(owner && seesWorkspace(authority, owner))) throw sessionRefused(asked)
    const existing = await sessionById(tx, id)
    if (existing) {
      if (existing.cwd !== cwd) {
        throw new TermkeepError('session/conflict', `session ${id} is already recorded with another cwd`, { sessionId: id })
      }
      if ((input.host !== undefined || workspace) && existing.host !== null && existing.host !== hostId) {
        throw new TermkeepError('session/conflict', `session ${id} is already recorded on another host`, { sessionId: id })
      }
      return { session: existing, created: false }
    }
    if (owner && owner.host === null && hostId !== null) {
      await writes.claimWorkspace(tx, owner.id, hostId)
    }
    await writes.insertSession(tx, { id, cwd, title: input.title ?? null, hostId }, owner?.id)
    if (input.name !== undefined) await claimSessionName(tx, id, input.name)
    if (owner) {
      await touchWorkspace(tx, owner.id)
      await appendEvent(tx, { kind: 'upsert', payload: { workspace: (await workspaceById(tx, owner.id))! } })
    }
    return { session: (await sessionById(tx, id))!, created: true }
  })
}

/** The session's canonical cwd on its host; undefined when a session-bound token may not record
 * one there. With a workspace named, it must be that workspace's directory. */
async function sessionDirectory(
  db: Database,
  placement: Placement,
  authority: Authority,
  asked: string,
  workspace: Workspace | undefined,
): Promise<string | undefined> {
  if (workspace && asked === workspace.path) return workspace.path
  const cwd =
    authority.sessions !== 'all'
      ? (await visibleOwner(db, placement, authority, asked))?.path
      : await canonicalDirectory(placement.sidecar, asked)
  if (workspace && cwd !== undefined && cwd !== workspace.path) {
    throw new TermkeepError('workspace/invalid-path', `${asked} is not the directory of workspace ${workspace.id} (${workspace.path})`, {
      path: asked,
      reason: 'not-the-workspace',
    })
  }
  return cwd
}

/** Adds to the global archive set; the session keeps its workspace slot. No-op when archived. */
export async function archiveSession(db: Database, id: string): Promise<string[]> {
  return mutate(db, async (tx) => {
    if (!(await sessionById(tx, id))) throw new TermkeepError('session/not-found', `no session ${id}`)
    if (!(await writes.archive(tx, id))) return archivedIds(tx)
    const archived = await archivedIds(tx)
    await appendEvent(tx, { kind: 'archived', payload: { archivedSessionIds: archived } })
    return archived
  })
}

/** Removes from the archive set; the untouched slot restores the old position. */
export async function unarchiveSession(db: Database, id: string): Promise<string[]> {
  return mutate(db, async (tx) => {
    const removed = await writes.unarchive(tx, id)
    const archived = await archivedIds(tx)
    if (removed) await appendEvent(tx, { kind: 'archived', payload: { archivedSessionIds: archived } })
    return archived
  })
}
