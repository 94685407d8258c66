/**
 * The hosts watch on the client (GET /v1/hosts/watch): a pure reducer over `baseline`, `upsert`
 * and `remove`, and a loop that keeps the stream open. The stream has no event ids: a reconnect
 * starts from a new baseline, which replaces everything.
 */
import type { Host } from '../../schema/wire/hosts.ts'
import { ApiError, type TermkeepClient } from './api.ts'

/** Pure: the hosts after one watch event, in the order they were first shown. */
export function applyHostEvent(hosts: readonly Host[], event: string, data: unknown): Host[] {
  switch (event) {
    case 'baseline':
      return (data as { hosts: Host[] }).hosts
    case 'upsert': {
      const { host } = data as { host: Host }
      const at = hosts.findIndex((h) => h.id === host.id)
      return at === -1 ? [...hosts, host] : hosts.map((h, i) => (i === at ? host : h))
    }
    case 'remove':
      return hosts.filter((h) => h.id !== (data as { hostId: string }).hostId)
    default:
      return [...hosts]
  }
}

const RETRY_MS = [500, 1000, 2000, 5000]

/** Watches the hosts until `signal` aborts; a refusal (401, 403) ends the watch quietly: the page
 * then shows no hosts, as for one host. */
export async function watchHosts(client: TermkeepClient, onChange: (hosts: Host[]) => void, signal: AbortSignal): Promise<void> {
  let hosts: Host[] = []
  let failures = 0
  while (!signal.aborted) {
    try {
      for await (const event of await client.stream('/v1/hosts/watch', { signal })) {
        failures = 0
        hosts = applyHostEvent(hosts, event.event, JSON.parse(event.data))
        onChange(hosts)
      }
    } catch (error) {
      if (signal.aborted || error instanceof ApiError) return
      failures++
    }
    await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]))
  }
}
