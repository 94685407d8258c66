/**
 * The generation heartbeat never waits for another process's write lock: an embedded libSQL write
 * that waits blocks its thread for the whole busy timeout (the sidecar's event loop with it), so
 * the beat goes on the connection that does not wait, and a held lock skips it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openStorage } from '../../storage/client.ts'
import { beatWithoutWaiting, insertGeneration } from '../../storage/generations.ts'
import { migrate } from '../../storage/migrate.ts'
import { holdWriteLock } from '../support/write-lock.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-heartbeat-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('the generation heartbeat', () => {
  it('is skipped at once while another process holds the write lock, and written once it is free', async () => {
    const url = `file:${join(dir, 'beat.db')}`
    const storage = await openStorage({ url, busyTimeoutMs: 5_000 })
    try {
      await migrate(storage.client)
      const runner = { hostId: null, pid: process.pid, startTicks: 1, bootId: 'boot', hostname: 'here', pidNamespace: 'pid:[1]' }
      const generation = await insertGeneration(storage.db, runner)
      const holder = holdWriteLock(url)
      try {
        await holder.locked
        const started = performance.now()
        const beaten = await beatWithoutWaiting(storage.probe, generation)
        const took = performance.now() - started
        expect(beaten).toBe(false)
        // The ordinary connection would have held the thread for its 5 s busy timeout.
        expect(took).toBeLessThan(2_000)
      } finally {
        await holder.release()
      }
      expect(await beatWithoutWaiting(storage.probe, generation)).toBe(true)
    } finally {
      storage.close()
    }
  })
})
