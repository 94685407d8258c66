/**
 * Claiming a host generation at start. The new row is written first, then every earlier
 * generation of the same host (storage/generations.ts) not known to have ended is judged (liveness.ts): one still running makes this
 * sidecar refuse to start (GenerationBusy) instead of retiring its terminals; the dead ones are
 * marked ended, and the caller then kills what they left running and retires their rows.
 *
 * Written first, judged after: of two sidecars starting at once, the later row always sees the
 * earlier (autoincrement order is write order) and refuses, while the earlier may see the later
 * but only earlier ones count. While it runs, a generation refreshes its heartbeat; a clean stop
 * records its end.
 */
import { GENERATION_HEARTBEAT_MS } from '../tuning.ts'
import type { Client } from '@libsql/client'
import { beatWithoutWaiting, endGeneration, insertGeneration, markServing, unendedBefore } from '../../storage/generations.ts'
import type { Database } from '../../storage/client.ts'
import { here as seenHere, liveness, thisRunner, type GenerationRecord, type Here } from './liveness.ts'

/** A start refused: an earlier sidecar on the same database still runs. */
export class GenerationBusy extends Error {
  override name = 'GenerationBusy'
  constructor(
    readonly running: GenerationRecord,
    how: string,
  ) {
    super(
      `another termkeep sidecar uses this database (DATABASE_URL): generation ${running.generation}, pid ${running.pid} on ${running.hostname} (${how}); stop it first, or give this one its own database`,
    )
  }
}

export interface ClaimedGeneration {
  generation: number
  /** Earlier generations found dead (their terminals are the caller's to sweep and retire). */
  ended: { generation: number; why: string }[]
  /** Its sidecar answers HTTP now: the host is listed `up` (until then it is `starting`). */
  serving(): Promise<void>
  /** A clean stop: the heartbeat ends and the row records the end. */
  end(): Promise<void>
}

export interface ClaimOptions {
  /** The host this sidecar runs as (null: none, as before hosts): only its own earlier
   * generations, and those of no host, are judged. */
  hostId?: string | null
  here?: () => Here
}

/** `probe`: the connection the heartbeat is written on (storage/generations.ts `beatWithoutWaiting`);
 * the heartbeat is also the host's liveness (storage/hosts.ts). */
export async function claimGeneration(
  db: Database,
  probe: Client,
  { hostId = null, here = seenHere }: ClaimOptions = {},
): Promise<ClaimedGeneration> {
  const generation = await insertGeneration(db, { ...thisRunner(), hostId })
  const earlier = await unendedBefore(db, generation)
  const seen = here()
  const ended: ClaimedGeneration['ended'] = []
  for (const record of earlier) {
    const verdict = liveness(record, seen)
    if (verdict.alive) {
      await endGeneration(db, generation)
      throw new GenerationBusy(record, verdict.how)
    }
    ended.push({ generation: record.generation, why: verdict.why })
  }
  for (const { generation: dead } of ended) {
    await endGeneration(db, dead)
  }
  const heartbeat = setInterval(() => {
    beatWithoutWaiting(probe, generation).catch((error: unknown) =>
      console.error(`termkeep sidecar: the generation heartbeat was not written: ${(error as Error).message}`),
    )
  }, GENERATION_HEARTBEAT_MS)
  heartbeat.unref()
  return {
    generation,
    ended,
    serving: () => markServing(db, generation),
    async end() {
      clearInterval(heartbeat)
      await endGeneration(db, generation)
    },
  }
}
