/**
 * Host generations: one row per sidecar start on this database, with its heartbeat and its end.
 * How a start judges the earlier ones is sidecar/generations/.
 */
import { and, eq, isNull, lt } from 'drizzle-orm'
import type { Client } from '@libsql/client'
import type { Database } from './client.ts'
import { hostGenerations } from './tables.ts'

export type GenerationRecord = typeof hostGenerations.$inferSelect

/** A new generation, running now; its number is write order. */
export async function insertGeneration(
  db: Database,
  runner: Pick<GenerationRecord, 'pid' | 'startTicks' | 'bootId' | 'hostname' | 'pidNamespace'>,
): Promise<number> {
  const now = Date.now()
  const [{ generation }] = await db
    .insert(hostGenerations)
    .values({ ...runner, startedAt: now, heartbeatAt: now })
    .returning({ generation: hostGenerations.generation })
  return generation
}

/** Generations before `generation` not known to have ended. */
export function unendedBefore(db: Database, generation: number): Promise<GenerationRecord[]> {
  return db
    .select()
    .from(hostGenerations)
    .where(and(lt(hostGenerations.generation, generation), isNull(hostGenerations.endedAt)))
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

export async function endGeneration(db: Database, generation: number): Promise<void> {
  await db.update(hostGenerations).set({ endedAt: Date.now() }).where(eq(hostGenerations.generation, generation))
}
