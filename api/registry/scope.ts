/**
 * What a token sees of the registry (docs/security-workspaces.md). A token bound to all sessions
 * sees everything. A token bound to some sessions sees only the workspaces that list one of its
 * sessions, and of those only its own session ids; every other workspace, session id and change
 * is as if absent: left out of lists and the watch, `null` from resolve, 404 to mutations.
 * Registering a directory needs a token bound to all sessions (with workspaces:write).
 */
import type { RegistryIncrement, Workspace, WorkspaceList } from '../../schema/wire/registry.ts'
import type { Authority } from '../../storage/authority.ts'

function keep(authority: Authority, ids: readonly string[]): string[] {
  const scope = authority.sessions
  return scope === 'all' ? [...ids] : ids.filter((id) => scope.has(id))
}

/** Pure: may `authority` see `workspace` (its member sessions, as stored)? */
export function seesWorkspace(authority: Authority, workspace: Workspace): boolean {
  const scope = authority.sessions
  return scope === 'all' || workspace.sessionIds.some((id) => scope.has(id))
}

/** Pure: may `authority` register a directory no workspace owns? Only a token bound to all
 * sessions: one bound to some could otherwise make any directory a workspace of its own. */
export function mayRegister(authority: Authority): boolean {
  return authority.sessions === 'all' && authority.grants.has('workspaces:write')
}

export function scopeWorkspace(authority: Authority, workspace: Workspace): Workspace {
  return authority.sessions === 'all' ? workspace : { ...workspace, sessionIds: keep(authority, workspace.sessionIds) }
}

export function scopeList(authority: Authority, list: WorkspaceList): WorkspaceList {
  return {
    workspaces: list.workspaces.filter((w) => seesWorkspace(authority, w)).map((w) => scopeWorkspace(authority, w)),
    archivedSessionIds: keep(authority, list.archivedSessionIds),
  }
}

export function scopeArchived(authority: Authority, ids: readonly string[]): string[] {
  return keep(authority, ids)
}

/** Pure: `order` without the workspaces `authority` cannot see (`visible`: the ids it can). */
export function scopeOrder(authority: Authority, order: readonly string[], visible: ReadonlySet<string>): string[] {
  return authority.sessions === 'all' ? [...order] : order.filter((id) => visible.has(id))
}

/**
 * One watch stream's view: its baseline, then each stored increment as this authority sees it, or
 * undefined when it sees nothing of it. For a session-bound token the view remembers what it has
 * shown: an upsert of a workspace it cannot see is dropped (or becomes a `remove` if it was shown,
 * should a workspace ever stop listing the token's sessions), a removal of one never shown is
 * dropped, and an order or archive change that leaves its view as it was is dropped too (it
 * would only tell that something moved elsewhere).
 */
export class RegistryView {
  readonly #authority: Authority
  readonly #shown = new Set<string>()
  /** What each shown workspace looked like, but for `updatedAt`: an upsert that changes only
   * that (a hidden session joined, moved or left) would tell of activity the token cannot see. */
  readonly #looked = new Map<string, string>()
  #order: string[] = []
  #archived: string[] = []

  constructor(authority: Authority) {
    this.#authority = authority
  }

  baseline(list: WorkspaceList): WorkspaceList {
    const scoped = scopeList(this.#authority, list)
    this.#shown.clear()
    this.#looked.clear()
    for (const workspace of scoped.workspaces) {
      this.#shown.add(workspace.id)
      this.#looked.set(workspace.id, looks(workspace))
    }
    this.#order = scoped.workspaces.map((w) => w.id)
    this.#archived = scoped.archivedSessionIds
    return scoped
  }

  next(increment: RegistryIncrement): RegistryIncrement | undefined {
    const authority = this.#authority
    if (authority.sessions === 'all') return increment
    switch (increment.kind) {
      case 'upsert': {
        const { workspace } = increment.payload
        if (seesWorkspace(authority, workspace)) {
          const scoped = scopeWorkspace(authority, workspace)
          if (this.#shown.has(workspace.id) && this.#looked.get(workspace.id) === looks(scoped)) return undefined
          this.#shown.add(workspace.id)
          this.#looked.set(workspace.id, looks(scoped))
          return { kind: 'upsert', payload: { workspace: scoped } }
        }
        return this.#shown.has(workspace.id) ? this.#removed(workspace.id) : undefined
      }
      case 'remove':
        return this.#shown.has(increment.payload.workspaceId) ? this.#removed(increment.payload.workspaceId) : undefined
      case 'order': {
        const order = scopeOrder(authority, increment.payload.workspaceIds, this.#shown)
        if (same(order, this.#order)) return undefined
        this.#order = order
        return { kind: 'order', payload: { workspaceIds: order } }
      }
      case 'archived': {
        const archived = keep(authority, increment.payload.archivedSessionIds)
        if (same(archived, this.#archived)) return undefined
        this.#archived = archived
        return { kind: 'archived', payload: { archivedSessionIds: archived } }
      }
    }
  }

  #removed(workspaceId: string): RegistryIncrement {
    this.#shown.delete(workspaceId)
    this.#looked.delete(workspaceId)
    this.#order = this.#order.filter((id) => id !== workspaceId)
    return { kind: 'remove', payload: { workspaceId } }
  }
}

/** A workspace as a token sees it, but for when it last changed. */
function looks(workspace: Workspace): string {
  const { updatedAt: _, ...rest } = workspace
  return JSON.stringify(rest)
}

const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i])
