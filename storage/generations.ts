/**
 * Host generations: one row per sidecar start on this database, with its host, its heartbeat and
 * its end. How a start judges the earlier ones is sidecar/generations/.
 *
 * Many hosts share one database, so "earlier" always means earlier on the same host: a start
 * judges, retires and sweeps only what its own host's generations left (and what rows written
 * before hosts existed left, which no host owns: the first start of any host takes them over).
 */
import { and, eq, isNull, lt, or, type SQL, type SQLWrapper, sql } from 'drizzle-orm'
import type { Client } from '@libsql/client'
import type { Database } from './client.ts'
import { hostGenerations } from './tables.ts'

export type GenerationRecord = typeof hostGenerations.$inferSelect

/** A new generation of `hostId`, running now; its number is write order. */
export async function insertGeneration(
  db: Database,
  runner: Pick<GenerationRecord, 'hostId' | 'pid' | 'startTicks' | 'bootId' | 'hostname' | 'pidNamespace'>,
): Promise<number> {
  const now = Date.now()
  const [{ generation }] = await db
    .insert(hostGenerations)
    .values({ ...runner, startedAt: now, heartbeatAt: now, starting: true })
    .returning({ generation: hostGenerations.generation })
  return generation
}

/** Generations of the same host before `generation` not known to have ended. */
export function unendedBefore(db: Database, generation: number): Promise<GenerationRecord[]> {
  return db
    .select()
    .from(hostGenerations)
    .where(and(lt(hostGenerations.generation, generation), isNull(hostGenerations.endedAt), sameHostAs(generation)))
}

/** Of the generations, those of the host that started `generation` or of no host (rows from
 * before hosts). */
function sameHostAs(generation: number): SQL {
  const host = sql`(SELECT ${hostGenerations.hostId} FROM ${hostGenerations} WHERE ${hostGenerations.generation} = ${generation})`
  return or(isNull(hostGenerations.hostId), eq(hostGenerations.hostId, host)) as SQL
}

/**
 * A condition on a column holding a generation number (`terminals.host_generation`,
 * `workflow_runs.host_generation`): it names an earlier generation of the host that started
 * `generation`, not one of another host. A number with no generation row (an older version's)
 * counts as this host's, as it always did.
 */
export function earlierOnSameHost(column: SQLWrapper, generation: number): SQL {
  const host = sql`(SELECT ${hostGenerations.hostId} FROM ${hostGenerations} WHERE ${hostGenerations.generation} = ${generation})`
  const otherHosts = sql`(SELECT ${hostGenerations.generation} FROM ${hostGenerations} WHERE ${hostGenerations.hostId} IS NOT NULL AND ${hostGenerations.hostId} <> ${host})`
  return sql`(${column} < ${generation} AND ${column} NOT IN ${otherHosts})`
}

/**
 * The heartbeat, on the connection that never waits for a write lock (client.ts `probe`). An
 * embedded libSQL write waiting on another process's lock blocks the writer's thread for the busy
 * timeout, so a beat on the ordinary connection froze the sidecar for up to 10 s while a backup or
 * another writer held the lock. Found held, the beat is skipped (false): a lease is three beats.
 */
export async function beatWithoutWaiting(probe: Client, generation: number): Promise<boolean> {
  try {
    await probe.execute({ sql: 'UPDATE host_generations SET heartbeat_at = ? WHERE generation = ?', args: [Date.now(), generation] })
    return true
  } catch (error) {
    if (String((error as { code?: string }).code ?? '').startsWith('SQLITE_BUSY')) return false
    throw error
  }
}

/** The generation's sidecar answers HTTP: its host is listed `up` from now on (storage/hosts.ts). */
export async function markServing(db: Database, generation: number): Promise<void> {
  await db.update(hostGenerations).set({ starting: false }).where(eq(hostGenerations.generation, generation))
}

export async function endGeneration(db: Database, generation: number): Promise<void> {
  await db.update(hostGenerations).set({ endedAt: Date.now() }).where(eq(hostGenerations.generation, generation))
}
