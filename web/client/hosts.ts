/**
 * The hosts as the page shows them: GET /v1/hosts read again every HOSTS_POLL_MS while the page is
 * visible. Not the hosts watch: a browser holds at most six connections to one origin, and the
 * page's streams (the registry watch, each terminal's follow) already take most of them; a second
 * window of the page would then wait for a free one.
 */
import type { Host } from '../../schema/wire/hosts.ts'
import { ApiError, type TermkeepClient } from './api.ts'

/** As often as the API reads the hosts itself (HOSTS_CACHE_MS) would be pointless; a host that
 * stops is shown down within this long. */
export const HOSTS_POLL_MS = 3_000

/** Pure: whether two readings differ in anything but heartbeats (which change every 10 s). */
export function sameHosts(a: readonly Host[], b: readonly Host[]): boolean {
  const looks = (hosts: readonly Host[]) => JSON.stringify(hosts.map(({ heartbeatAt: _, ...rest }) => rest))
  return looks(a) === looks(b)
}

/** Reads the hosts until `signal` aborts, calling `onChange` when they changed; a refusal (401,
 * 403) ends it quietly: the page then shows no hosts, as for one host. */
export async function pollHosts(client: TermkeepClient, onChange: (hosts: Host[]) => void, signal: AbortSignal): Promise<void> {
  let shown: Host[] | undefined
  while (!signal.aborted) {
    if (document.visibilityState === 'visible' || shown === undefined) {
      try {
        const hosts = await client.hosts()
        if (!shown || !sameHosts(shown, hosts)) onChange((shown = hosts))
      } catch (error) {
        if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return
      }
    }
    await new Promise((r) => setTimeout(r, HOSTS_POLL_MS))
  }
}
