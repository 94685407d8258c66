/**
 * Generation liveness: the pure judgement, table-driven, and the claim against a real database
 * (two claims from this one process: the first one's pid and start time are this process's, so
 * it runs; a remote host's row counts while its heartbeat is fresh).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { GENERATION_LEASE_MS } from '../tuning.ts'
import { hostGenerations } from '../../storage/tables.ts'
import { openStorage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import type { ProcessStat } from '../../local/proc.ts'
import { claimGeneration, GenerationBusy } from './claim.ts'
import { liveness, type GenerationRecord, type Here } from './liveness.ts'

describe('liveness', () => {
  const now = 1_000_000
  const running: ProcessStat = { pid: 42, ppid: 1, pgrp: 42, session: 42, startTicks: 700, zombie: false }
  const here: Here = {
    pid: 1,
    startTicks: 1,
    bootId: 'boot',
    hostname: 'box',
    pidNamespace: 'pid:[1]',
    now,
    stat: (pid) => (pid === 42 ? running : undefined),
  }
  const record = (patch: Partial<GenerationRecord>): GenerationRecord => ({
    generation: 3,
    hostId: null,
    pid: 42,
    startedAt: 0,
    startTicks: 700,
    bootId: 'boot',
    hostname: 'box',
    pidNamespace: 'pid:[1]',
    heartbeatAt: 0, // stale: on the same host the pid decides, never the lease
    endedAt: null,
    starting: false,
    ...patch,
  })
  const cases: [string, Partial<GenerationRecord>, Partial<Here>, boolean][] = [
    ['same host and boot, its pid runs with its start time', {}, {}, true],
    ['same host and boot, its pid now names a later process', { startTicks: 600 }, {}, false],
    ['same host and boot, its pid is gone (kill -9), heartbeat fresh', { pid: 43, heartbeatAt: now }, {}, false],
    ['same host and boot, a zombie', {}, { stat: () => ({ ...running, zombie: true }) }, false],
    ['same host, another boot (rebooted), heartbeat fresh', { bootId: 'old', heartbeatAt: now }, {}, false],
    ['another host, fresh heartbeat', { hostname: 'other', heartbeatAt: now - GENERATION_LEASE_MS + 1 }, {}, true],
    ['another host, stale heartbeat', { hostname: 'other', heartbeatAt: now - GENERATION_LEASE_MS }, {}, false],
    ['another pid namespace on this kernel, fresh heartbeat', { pidNamespace: 'pid:[2]', pid: 43, heartbeatAt: now }, {}, true],
    ['ended', { endedAt: 5 }, {}, false],
    ['written by an older version (no identity)', { bootId: null, hostname: null, startTicks: null }, {}, false],
  ]
  it.each(cases)('%s', (_, patch, seen, alive) => {
    expect(liveness(record(patch), { ...here, ...seen }).alive).toBe(alive)
  })
})

describe('claimGeneration', () => {
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-generations-'))
  let close = () => {}
  afterAll(() => close())

  it('refuses while an earlier generation runs, marks itself ended, and claims once that one ended', async () => {
    const storage = await openStorage({ url: `file:${join(dir, 'claim.db')}` })
    close = () => storage.close()
    await migrate(storage.client)
    const first = await claimGeneration(storage.db, storage.probe)
    const refused = await claimGeneration(storage.db, storage.probe).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(GenerationBusy)
    expect((refused as Error).message).toMatch(
      new RegExp(
        `^another termkeep sidecar uses this database \\(DATABASE_URL\\): generation ${first.generation}, pid ${process.pid} on .+ \\(its process runs\\); stop it first`,
      ),
    )
    const rows = await storage.db.select().from(hostGenerations)
    expect(rows.map((r) => [r.generation, r.endedAt !== null])).toEqual([
      [first.generation, false],
      [first.generation + 1, true],
    ])

    // Another host's generation with a fresh heartbeat counts too; a stale one does not.
    await first.end()
    const remote = { pid: 1, hostname: 'elsewhere.example', bootId: 'another-boot', startTicks: 1, pidNamespace: 'pid:[9]' }
    await storage.db.insert(hostGenerations).values({ ...remote, heartbeatAt: Date.now() })
    await expect(claimGeneration(storage.db, storage.probe)).rejects.toThrow(/on elsewhere\.example \(its heartbeat is \d+ s old\)/)
    await storage.db.update(hostGenerations).set({ heartbeatAt: Date.now() - GENERATION_LEASE_MS })
    const next = await claimGeneration(storage.db, storage.probe)
    expect(next.ended.map((g) => g.why)).toEqual(['its heartbeat stopped'])
    await next.end()
  })
})
