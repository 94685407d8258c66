/**
 * Host generations: one row per sidecar start on this database, with its heartbeat and its end.
 * How a start judges the earlier ones is sidecar/generations/.
 */
import { and, eq, isNull, lt } from 'drizzle-orm'
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

export async function endGeneration(db: Database, generation: number): Promise<void> {
  await db.update(hostGenerations).set({ endedAt: Date.now() }).where(eq(hostGenerations.generation, generation))
}

export async function beat(db: Database, generation: number): Promise<void> {
  await db.update(hostGenerations).set({ heartbeatAt: Date.now() }).where(eq(hostGenerations.generation, generation))
}
