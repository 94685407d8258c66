/**
 * `GET /v1/hosts/watch`: one `baseline` {hosts}, then an `upsert` {host, change} when a host joins,
 * changes, goes down or comes back up, and `remove` {hostId} when one leaves the token's view.
 * Liveness is a heartbeat's age (storage/hosts.ts), which no write announces, so the hosts are
 * read again every HOSTS_WATCH_POLL_MS and compared with what the stream has shown (changes.ts).
 * There is no log to resume from: events carry no id, and a reconnect starts with a new baseline.
 * A session-bound token sees only its sessions' hosts, as in GET /v1/hosts.
 */
import type { Host } from '../../schema/wire/hosts.ts'
import type { Authority } from '../../storage/authority.ts'
import type { Database } from '../../storage/client.ts'
import { sessionHosts } from '../../storage/hosts.ts'
import { pause } from '../../common/retry.ts'
import type { SseSink } from '../sse.ts'
import { HOSTS_WATCH_POLL_MS } from '../tuning.ts'
import { HostsView } from './changes.ts'
import type { Fleet } from './fleet.ts'

export interface HostsWatchTuning {
  pollMs?: number
  /** End the stream (cleanly) after this many polls (Workers: a request's subrequests are bounded). */
  maxPolls?: number
}

/** The hosts `authority` may see, as GET /v1/hosts lists them. */
export async function visibleHosts(fleet: Fleet, db: Database, authority: Authority): Promise<Host[]> {
  const hosts = await fleet.hosts()
  if (authority.sessions === 'all') return hosts
  const visible = new Set(await sessionHosts(db, [...authority.sessions]))
  return hosts.filter((h) => visible.has(h.id))
}

export async function watchHosts(
  fleet: Fleet,
  db: Database,
  authority: Authority,
  sink: SseSink,
  { pollMs = HOSTS_WATCH_POLL_MS, maxPolls = Infinity }: HostsWatchTuning = {},
): Promise<void> {
  const view = new HostsView()
  await sink.send({ event: 'baseline', data: { hosts: view.baseline(await visibleHosts(fleet, db, authority)) } })
  for (let polls = 0; polls < maxPolls; polls++) {
    await pause(pollMs, sink.signal)
    if (sink.signal.aborted) return
    for (const { kind, payload } of view.next(await visibleHosts(fleet, db, authority))) {
      await sink.send({ event: kind, data: payload })
    }
  }
}
