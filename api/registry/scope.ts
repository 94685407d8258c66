/**
 * What a session-scoped token sees of the registry: workspaces are not session resources, but
 * the session ids inside them are, so ids outside the token's scope are left out (exactly as if
 * those sessions did not exist).
 */
import type { RegistryIncrement, Workspace, WorkspaceList } from '../../schema/wire/registry.ts'
import type { Authority } from '../auth/guard.ts'

function keep(authority: Authority, ids: readonly string[]): string[] {
  const scope = authority.sessions
  return scope === 'all' ? [...ids] : ids.filter((id) => scope.has(id))
}

export function scopeWorkspace(authority: Authority, workspace: Workspace): Workspace {
  return authority.sessions === 'all' ? workspace : { ...workspace, sessionIds: keep(authority, workspace.sessionIds) }
}

export function scopeList(authority: Authority, list: WorkspaceList): WorkspaceList {
  return {
    workspaces: list.workspaces.map((w) => scopeWorkspace(authority, w)),
    archivedSessionIds: keep(authority, list.archivedSessionIds),
  }
}

export function scopeArchived(authority: Authority, ids: readonly string[]): string[] {
  return keep(authority, ids)
}

export function scopeIncrement(authority: Authority, increment: RegistryIncrement): RegistryIncrement {
  switch (increment.kind) {
    case 'upsert':
      return { kind: 'upsert', payload: { workspace: scopeWorkspace(authority, increment.payload.workspace) } }
    case 'archived':
      return { kind: 'archived', payload: { archivedSessionIds: keep(authority, increment.payload.archivedSessionIds) } }
    default:
      return increment
  }
}
