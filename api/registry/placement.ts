/**
 * Where a registry request's directory is. A workspace is a directory on one host (a path is
 * unique per host: two hosts may both have ~/src/app); a session lives on its workspace's host.
 * Paths are canonicalized by that host's sidecar, so the host is decided first: the one the
 * request names, else its workspace's, else the only one there is (single-host use unchanged).
 * A session-bound token may name only the hosts its sessions live on (scope.ts): any other host is
 * as unknown to it as one that does not exist.
 */
import { TermkeepError } from '../../schema/errors.ts'
import type { Workspace } from '../../schema/wire/registry.ts'
import type { Authority } from '../../storage/authority.ts'
import type { Database } from '../../storage/client.ts'
import { sessionHosts } from '../../storage/hosts.ts'
import { requireWorkspace } from '../../storage/registry/workspaces.ts'
import type { Fleet, Placement } from '../hosts/fleet.ts'
import { seesWorkspace } from './scope.ts'

/** The hosts `authority` may name: all (undefined), or its sessions' hosts. */
export async function namableHosts(db: Database, authority: Authority): Promise<ReadonlySet<string> | undefined> {
  return authority.sessions === 'all' ? undefined : new Set(await sessionHosts(db, [...authority.sessions]))
}

/** The host a workspace request's directory is on: the named one, else the only one. */
export async function placeDirectory(db: Database, fleet: Fleet, authority: Authority, host: string | undefined): Promise<Placement> {
  return fleet.place(host, await namableHosts(db, authority))
}

export interface SessionPlace {
  placement: Placement
  /** The workspace the request named, as stored. */
  workspace?: Workspace
}

/**
 * The host of a new session: its workspace's (a `host` that names another is 409
 * `host/mismatch`), else the named one, else the only host. A cwd alone never picks among several
 * hosts: the same path may be a directory on each.
 */
export async function placeSession(
  db: Database,
  fleet: Fleet,
  authority: Authority,
  input: { cwd?: string; host?: string; workspace?: string },
): Promise<SessionPlace> {
  const among = await namableHosts(db, authority)
  if (input.workspace !== undefined) {
    const workspace = await requireWorkspace(db, input.workspace)
    if (!seesWorkspace(authority, workspace)) {
      throw new TermkeepError('workspace/not-found', `no workspace ${input.workspace}`, { workspaceId: input.workspace })
    }
    if (workspace.host === null) return { placement: await fleet.place(input.host, among), workspace }
    if (input.host !== undefined) {
      const named = await fleet.resolve(input.host, among)
      if (named?.id !== workspace.host) {
        throw new TermkeepError('host/mismatch', `workspace ${workspace.id} is on host ${workspace.host}, not on ${input.host}`, {
          host: input.host,
          workspaceHost: workspace.host,
        })
      }
    }
    return { placement: await fleet.placeOn(workspace.host), workspace }
  }
  return { placement: await fleet.place(input.host, among) }
}
