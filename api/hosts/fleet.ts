/**
 * Routing live calls to hosts. Every session names the host its terminals and files live on; the
 * API reaches that host's sidecar at the URL it registered, with its secret: derived from the
 * fleet secret, the host id and its secret epoch (TERMKEEP_FLEET_SECRET), else SIDECAR_SECRET as
 * one host always was. A host that is down answers `host/unavailable` naming it, at once when its heartbeat
 * stopped; the other hosts are not touched.
 *
 * One host without a fleet secret (every deployment before hosts, `termkeep serve`) is reached
 * exactly as before: at the configured SIDECAR_URL, errors `sidecar/unavailable`. So is a session recorded before hosts, and
 * one that does not exist (its sidecar answers `session/not-found` as it always did).
 */
import { deriveHostSecret } from '../../common/crypto.ts'
import { TermkeepError } from '../../schema/errors.ts'
import type { Host } from '../../schema/wire/hosts.ts'
import type { Database } from '../../storage/client.ts'
import { listHosts, sessionHost } from '../../storage/hosts.ts'
import type { SidecarClient } from '../sidecar-client.ts'
import { HOSTS_CACHE_MS } from '../tuning.ts'

export interface FleetOptions {
  db: Database
  /** The configured sidecar (SIDECAR_URL, SIDECAR_SECRET): the one host, and health's. */
  local: SidecarClient
  /** TERMKEEP_FLEET_SECRET: each host's secret is derived from it. */
  fleetSecret?: string
}

/** Where a new session goes: the named host, else the only one; null when none registered yet. */
export interface Placement {
  hostId: string | null
  sidecar: SidecarClient
}

/** What every request's Fleet shares: the host list's cache and the hosts' clients. */
interface Shared {
  clients: Map<string, { url: string; epoch: number; client: Promise<SidecarClient> }>
  hosts: { at: number; hosts: Promise<Host[]> } | undefined
}

export class Fleet {
  readonly #db: Database
  readonly #local: SidecarClient
  readonly #fleetSecret: string | undefined
  readonly #shared: Shared
  /** This request's session rows: the guard's existence check and the route's routing read the
   * session once (a keystroke's input paid two queries for the same row). */
  readonly #rows = new Map<string, Promise<{ hostId: string | null } | undefined>>()

  constructor({ db, local, fleetSecret }: FleetOptions, shared: Shared = { clients: new Map(), hosts: undefined }) {
    this.#db = db
    this.#local = local
    this.#fleetSecret = fleetSecret
    this.#shared = shared
  }

  /** A Fleet for one request: the same caches, its own session rows. */
  forRequest(): Fleet {
    return new Fleet({ db: this.#db, local: this.#local, fleetSecret: this.#fleetSecret }, this.#shared)
  }

  /** The session's row (its host), read once per request; undefined when there is no such session. */
  session(sessionId: string): Promise<{ hostId: string | null } | undefined> {
    let row = this.#rows.get(sessionId)
    if (!row) {
      row = sessionHost(this.#db, sessionId)
      this.#rows.set(sessionId, row)
      row.catch(() => this.#rows.delete(sessionId))
    }
    return row
  }

  /** Every registered host, read at most every HOSTS_CACHE_MS. */
  hosts(): Promise<Host[]> {
    const now = Date.now()
    const shared = this.#shared
    if (!shared.hosts || now - shared.hosts.at >= HOSTS_CACHE_MS) {
      const hosts = listHosts(this.#db, now)
      shared.hosts = { at: now, hosts }
      hosts.catch(() => {
        if (shared.hosts?.hosts === hosts) shared.hosts = undefined
      })
    }
    return shared.hosts.hosts
  }

  /** The sidecar of the session's host; 503 `host/unavailable` when that host is known down
   * (`whenDown: 'client'`: its client all the same, for what needs only its keys). */
  async forSession(sessionId: string, { whenDown = 'refuse' }: { whenDown?: 'refuse' | 'client' } = {}): Promise<SidecarClient> {
    const [row, hosts] = await Promise.all([this.session(sessionId), this.hosts()])
    if (!row || row.hostId === null || this.#alone(hosts)) return this.#local
    const host = hosts.find((h) => h.id === row.hostId)
    if (!host) throw new TermkeepError('host/unavailable', `the session's host ${row.hostId} is not registered`, { host: row.hostId })
    if (!host.up && whenDown === 'refuse') throw unavailable(host, downReason(host))
    return this.#clientOf(host)
  }

  /** The session's host when it is known down (listed terminals are marked unreachable). */
  async downHostOf(sessionId: string): Promise<Host | undefined> {
    const [row, hosts] = await Promise.all([this.session(sessionId), this.hosts()])
    if (!row || row.hostId === null || this.#alone(hosts)) return undefined
    return hosts.find((h) => h.id === row.hostId && !h.up)
  }

  /** The host `selector` names (an id, or a name no other host has), else the only host; null
   * when none is registered yet. 400 `host/unknown`, 409 `host/ambiguous`. `among`: the hosts a
   * session-bound token may name (its sessions'); any other is as unknown to it. */
  async resolve(selector: string | undefined, among?: ReadonlySet<string>): Promise<Host | null> {
    const all = await this.hosts()
    const hosts = among === undefined ? all : all.filter((h) => among.has(h.id))
    if (selector === undefined) {
      if (hosts.length === 0) return null
      if (hosts.length > 1) {
        throw new TermkeepError('host/ambiguous', `there are ${hosts.length} hosts: name one (\`host\`)`, {
          hosts: hosts.map((h) => h.name),
        })
      }
    }
    const byId = hosts.filter((h) => h.id === selector)
    const matches = selector === undefined ? hosts : byId.length > 0 ? byId : hosts.filter((h) => h.name === selector)
    if (matches.length === 0) throw new TermkeepError('host/unknown', `no host is named ${selector}`, { host: selector })
    if (matches.length > 1) {
      throw new TermkeepError('host/ambiguous', `${matches.length} hosts are named ${selector}: name one by its id`, {
        hosts: matches.map((h) => h.id),
      })
    }
    return matches[0]!
  }

  /** Where a new session or workspace goes: the host `selector` names, else the only one. */
  async place(selector: string | undefined, among?: ReadonlySet<string>): Promise<Placement> {
    return this.placeOn(await this.resolve(selector, among))
  }

  /** The sidecar of `host` (null: none registered yet, the configured one); 503
   * `host/unavailable` when it is down or not registered. */
  async placeOn(host: Host | string | null): Promise<Placement> {
    const all = await this.hosts()
    const known = typeof host === 'string' ? all.find((h) => h.id === host) : host
    if (host === null) return { hostId: null, sidecar: this.#local }
    if (!known) throw new TermkeepError('host/unavailable', `host ${host} is not registered`, { host })
    if (this.#alone(all)) return { hostId: known.id, sidecar: this.#local }
    if (!known.up) throw unavailable(known, downReason(known))
    return { hostId: known.id, sidecar: await this.#clientOf(known) }
  }

  /** One host and no fleet secret: reached as before hosts, at SIDECAR_URL with SIDECAR_SECRET. */
  #alone(hosts: readonly Host[]): boolean {
    return hosts.length <= 1 && this.#fleetSecret === undefined
  }

  #clientOf(host: Host): Promise<SidecarClient> {
    const known = this.#shared.clients.get(host.id)
    // A rotated secret (a new epoch) is a new client: the old secret is never sent again.
    if (known && known.url === host.url && known.epoch === host.secretEpoch) return known.client
    const client = this.#secretOf(host).then((secret) =>
      this.#local.sibling({ url: host.url, secret, unavailable: (message) => unavailable(host, message) }),
    )
    this.#shared.clients.set(host.id, { url: host.url, epoch: host.secretEpoch, client })
    return client
  }

  /** Undefined: the configured SIDECAR_SECRET (no fleet secret). */
  async #secretOf(host: Host): Promise<string | undefined> {
    return this.#fleetSecret === undefined ? undefined : deriveHostSecret(this.#fleetSecret, host.id, host.secretEpoch)
  }
}

function unavailable(host: Host, why: string): TermkeepError {
  return new TermkeepError('host/unavailable', `host ${host.name} (${host.id}) is unavailable: ${why}`, {
    host: host.id,
    hostName: host.name,
  })
}

function downReason(host: Host): string {
  if (host.starting) return 'its sidecar is starting'
  const age = host.heartbeatAt === null ? 'ever' : `${Math.round((Date.now() - host.heartbeatAt) / 1000)} s`
  return `its sidecar stopped (no heartbeat for ${age})`
}
