/**
 * What a hosts watch tells (pure): the hosts as a token sees them now against what the stream has
 * shown. A host is told again only when something a person would see changed: its name, URL,
 * version, capacity, generation, or whether it is up, starting or down (and since when). Its
 * heartbeat alone, refreshed every HOST_HEARTBEAT_MS, is not a change.
 */
import type { Host } from '../../schema/wire/hosts.ts'

/** `joined`: first seen; `down` / `up`: its liveness flipped; `changed`: anything else. */
export type HostChange = 'joined' | 'changed' | 'down' | 'up'

export type HostIncrement =
  | { kind: 'upsert'; payload: { host: Host; change: HostChange } }
  | { kind: 'remove'; payload: { hostId: string } }

export class HostsView {
  readonly #shown = new Map<string, { host: Host; looks: string }>()

  baseline(hosts: readonly Host[]): Host[] {
    this.#shown.clear()
    for (const host of hosts) this.#shown.set(host.id, { host, looks: looks(host) })
    return [...hosts]
  }

  /** The increments that bring what was shown to `hosts`, in their order, then removals. */
  next(hosts: readonly Host[]): HostIncrement[] {
    const increments: HostIncrement[] = []
    const present = new Set<string>()
    for (const host of hosts) {
      present.add(host.id)
      const shown = this.#shown.get(host.id)
      const seen = looks(host)
      if (shown?.looks === seen) continue
      this.#shown.set(host.id, { host, looks: seen })
      increments.push({ kind: 'upsert', payload: { host, change: changeOf(shown?.host, host) } })
    }
    for (const id of [...this.#shown.keys()]) {
      if (present.has(id)) continue
      this.#shown.delete(id)
      increments.push({ kind: 'remove', payload: { hostId: id } })
    }
    return increments
  }
}

function changeOf(before: Host | undefined, now: Host): HostChange {
  if (!before) return 'joined'
  if (before.up !== now.up) return now.up ? 'up' : 'down'
  return 'changed'
}

/** A host as a person sees it: everything but its heartbeat. */
function looks(host: Host): string {
  const { heartbeatAt: _, ...rest } = host
  return JSON.stringify(rest)
}
