/**
 * Workspaces grouped by the host their directory is on, for the sidebar: with several hosts (or a
 * host that is down) each host is a heading that says whether it is up, starting, or down and since
 * when; one host that is up is no heading at all (single-host use looks as it always did).
 */
import type { Host } from '../../schema/wire/hosts.ts'
import type { Workspace } from '../../schema/wire/registry.ts'
import { h } from './dom.ts'

export interface HostGroup {
  /** Undefined: workspaces whose host is not (or no longer) listed. */
  host: Host | undefined
  workspaces: Workspace[]
}

/** Pure: whether the sidebar shows hosts at all. */
export function showsHosts(hosts: readonly Host[]): boolean {
  return hosts.length > 1 || hosts.some((host) => !host.up)
}

/** Pure: the workspaces by host, hosts in their listed order, each keeping the user's order. */
export function groupByHost(workspaces: readonly Workspace[], hosts: readonly Host[]): HostGroup[] {
  const groups: HostGroup[] = hosts.map((host) => ({ host, workspaces: [] }))
  const other: HostGroup = { host: undefined, workspaces: [] }
  for (const workspace of workspaces) {
    const group = groups.find((g) => g.host!.id === workspace.host) ?? other
    group.workspaces.push(workspace)
  }
  return other.workspaces.length > 0 ? [...groups, other] : groups
}

/** Pure: a host's state in words: `up`, `starting…`, `down`. */
export function hostState(host: Host): 'up' | 'starting' | 'down' {
  return host.up ? 'up' : host.starting ? 'starting' : 'down'
}

/** A host's heading: its name and its state, and for a host that is down since when. */
export function hostHead(host: Host | undefined): HTMLElement {
  if (!host) return h('div', { class: 'host-head' }, h('span', { class: 'host-name' }, 'Other hosts'))
  const state = hostState(host)
  const since =
    state === 'down' &&
    host.downSince !== null &&
    h(
      'time',
      { datetime: new Date(host.downSince).toISOString() },
      new Date(host.downSince).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }),
    )
  return h(
    'div',
    { class: 'host-head', title: `${host.name} (${host.id}) at ${host.url}, termkeep ${host.version}` },
    h('span', { class: 'host-name' }, host.name),
    h('span', { class: `host-state host-${state}`, role: 'status' }, state === 'starting' ? 'starting…' : state, since && ' since ', since),
  )
}
