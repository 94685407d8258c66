/**
 * Hosts (schema/wire/hosts.ts): what each sidecar registers at start, and the queries the API
 * routes by. A host is up while its newest generation has not ended and beat within
 * HOST_LEASE_MS; nothing else is stored about liveness.
 */
import { and, asc, eq, inArray, isNotNull, isNull, type SQL, sql } from 'drizzle-orm'
import { HOST_LEASE_MS } from '../schema/limits.ts'
import type { Host } from '../schema/wire/hosts.ts'
import type { Database } from './client.ts'
import { hostGenerations, hosts, sessions, workspaces } from './tables.ts'

export interface HostRegistration {
  id: string
  name: string
  url: string
  version: string
  cpus: number
  memoryBytes: number
}

/** Records (or refreshes) the host a starting sidecar runs on. */
export async function registerHost(db: Database, host: HostRegistration): Promise<void> {
  const now = Date.now()
  const { name, url, version, cpus, memoryBytes } = host
  await db
    .insert(hosts)
    .values({ ...host, registeredAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: hosts.id, set: { name, url, version, cpus, memoryBytes, updatedAt: now } })
}

/**
 * Sessions and workspaces recorded before they had hosts belong to the host they were made on.
 * Once this database has exactly one host, every one without a host is given to it; with several,
 * a host-less workspace goes to the host of the sessions it lists, when they are this host's
 * (idempotent; what stays host-less is claimed by the first host a request names it on).
 */
export async function adoptUnhosted(db: Database, hostId: string): Promise<{ sessions: number; workspaces: number }> {
  const [{ count }] = await db.select({ count: sql<number>`count(*)` }).from(hosts)
  if (count !== 1) {
    // The outer row spelled out: drizzle writes a bare column name in an UPDATE, which inside
    // the subquery would name the subquery's own table.
    const listsOurs = sql`EXISTS (SELECT 1 FROM workspace_sessions ws JOIN sessions s ON s.id = ws.session_id
      WHERE ws.workspace_id = "workspaces"."id" AND s.host_id = ${hostId})`
    const given = await db
      .update(workspaces)
      .set({ hostId })
      .where(and(isNull(workspaces.hostId), listsOurs, freeOn(hostId)))
    return { sessions: 0, workspaces: given.rowsAffected }
  }
  const given = await db.update(sessions).set({ hostId }).where(isNull(sessions.hostId))
  const placed = await db
    .update(workspaces)
    .set({ hostId })
    .where(and(isNull(workspaces.hostId), freeOn(hostId)))
  return { sessions: given.rowsAffected, workspaces: placed.rowsAffected }
}

/** No workspace of `hostId` has the row's path already (the unique index would refuse it). */
function freeOn(hostId: string): SQL {
  return sql`NOT EXISTS (SELECT 1 FROM workspaces w2 WHERE w2.host_id = ${hostId} AND w2.path = "workspaces"."path")`
}

const newest = sql`(SELECT max(${hostGenerations.generation}) FROM ${hostGenerations} WHERE ${hostGenerations.hostId} = ${hosts.id})`

function hostQuery(db: Database) {
  return db
    .select({
      host: hosts,
      generation: hostGenerations.generation,
      heartbeatAt: hostGenerations.heartbeatAt,
      endedAt: hostGenerations.endedAt,
      starting: hostGenerations.starting,
    })
    .from(hosts)
    .leftJoin(hostGenerations, eq(hostGenerations.generation, newest))
}

type HostRow = Awaited<ReturnType<ReturnType<typeof hostQuery>['execute']>>[number]

/** Pure: a joined row as the wire's Host, judged up or down at `now`. Up: its newest generation
 * serves (claimed and answering HTTP), has not ended, and beat within HOST_LEASE_MS. */
export function hostFromRow(row: HostRow, now: number): Host {
  const { host } = row
  const running = row.generation !== null && row.endedAt === null
  const beating = row.heartbeatAt !== null && now - row.heartbeatAt < HOST_LEASE_MS
  const starting = running && beating && row.starting === true
  const up = running && beating && !starting
  return {
    id: host.id,
    name: host.name,
    url: host.url,
    version: host.version,
    capacity: { cpus: host.cpus, memoryBytes: host.memoryBytes },
    up,
    starting,
    // Last known alive: its clean end, else its last heartbeat (a sidecar killed or cut off).
    downSince: up || starting ? null : (row.endedAt ?? row.heartbeatAt ?? null),
    generation: row.generation,
    heartbeatAt: row.heartbeatAt,
    secretEpoch: host.secretEpoch,
    registeredAt: host.registeredAt,
  }
}

/** Every host, in the order they first registered. */
export async function listHosts(db: Database, now = Date.now()): Promise<Host[]> {
  const rows = await hostQuery(db).orderBy(asc(hosts.registeredAt), asc(hosts.id))
  return rows.map((row) => hostFromRow(row, now))
}

/** The host's secret epoch (what its secret is derived with): 0 for a host not registered yet,
 * whose first secret is made before its first start (docs/operations.md). */
export async function hostSecretEpoch(db: Database, hostId: string): Promise<number> {
  const [row] = await db.select({ epoch: hosts.secretEpoch }).from(hosts).where(eq(hosts.id, hostId))
  return row?.epoch ?? 0
}

/** Rotates a registered host's secret: its epoch moves forward by one; undefined for no such host. */
export async function rotateHostSecret(db: Database, hostId: string): Promise<number | undefined> {
  const [row] = await db
    .update(hosts)
    .set({ secretEpoch: sql`${hosts.secretEpoch} + 1`, updatedAt: Date.now() })
    .where(eq(hosts.id, hostId))
    .returning({ epoch: hosts.secretEpoch })
  return row?.epoch
}

/** The host a session's live calls go to: undefined for no such session; `host` null for a
 * session recorded before hosts (the caller decides: the only host, else ambiguous). */
export async function sessionHost(db: Database, sessionId: string): Promise<{ hostId: string | null } | undefined> {
  const [row] = await db.select({ hostId: sessions.hostId }).from(sessions).where(eq(sessions.id, sessionId))
  return row
}

/** The hosts these sessions live on (a session-bound token's hosts). */
export async function sessionHosts(db: Database, sessionIds: readonly string[]): Promise<string[]> {
  if (sessionIds.length === 0) return []
  const rows = await db
    .selectDistinct({ hostId: sessions.hostId })
    .from(sessions)
    .where(and(inArray(sessions.id, [...sessionIds]), isNotNull(sessions.hostId)))
  return rows.map((row) => row.hostId!)
}
