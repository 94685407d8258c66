/**
 * Database health on a real file database: a write proves writability, at most once per
 * DB_WRITE_PROBE_MS, on a connection that never waits for a lock held elsewhere (a lock held
 * past DB_LOCK_DEGRADED_MS is reported); concurrent checks share one; the file
 * check finds a deleted or replaced database file; each change of state is logged once.
 */
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DB_LOCK_DEGRADED_MS, DB_WRITE_PROBE_MS } from '../schema/limits.ts'
import { DB_LOCK_RECHECK_MS } from './tuning.ts'
import { openStorage, type Storage } from './client.ts'
import { DatabaseFile } from './node/file-identity.ts'
import { StorageHealth } from './health.ts'
import { migrate } from './migrate.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-db-health-'))
const url = `file:${join(dir, 'termkeep.db')}`
let storage: Storage
let other: Storage

beforeAll(async () => {
  // A short busy timeout: a write that waits for a lock blocks this thread that long.
  storage = await openStorage({ url, busyTimeoutMs: 100 })
  await migrate(storage.client)
  other = await openStorage({ url })
})
afterAll(() => {
  storage?.close()
  other?.close()
})

function subject(file?: DatabaseFile) {
  let now = 1_000_000
  const lines: string[] = []
  const health = new StorageHealth({
    client: storage.client,
    probe: storage.probe,
    writer: 'api',
    log: (l) => lines.push(l),
    now: () => now,
    file: file && (() => file.check()),
  })
  const probes = async () =>
    Number((await other.client.execute(`SELECT checked_at FROM health_probes WHERE writer = 'api'`)).rows[0]?.[0] ?? 0)
  return { health, lines, probes, advance: (ms: number) => (now += ms), now: () => now }
}

describe('StorageHealth', () => {
  it('writes a probe at most once per DB_WRITE_PROBE_MS and says ok', async () => {
    const { health, lines, probes, advance, now } = subject()
    expect(await health.check()).toEqual({ database: { reachable: true, writable: true }, problems: [] })
    const first = await probes()
    expect(first).toBe(now())
    advance(DB_WRITE_PROBE_MS - 1)
    await health.check()
    expect(await probes()).toBe(first) // within the window: no write
    advance(1)
    await health.check()
    expect(await probes()).toBe(now())
    expect(lines).toEqual([])
  })

  it('never waits for a lock another connection holds: ok with a note at first, degraded once it is held DB_LOCK_DEGRADED_MS, logged once, and recovers', async () => {
    const { health, lines, advance } = subject()
    await health.check()
    const lock = await other.client.transaction('write')
    try {
      await lock.execute(`INSERT INTO health_probes (writer, checked_at) VALUES ('lock', 1) ON CONFLICT DO NOTHING`)
      advance(DB_WRITE_PROBE_MS)
      const started = performance.now()
      const held = await health.check()
      // The main connection waits up to its busy timeout (100 ms here, 10 s by default); the probe's does not.
      expect(performance.now() - started).toBeLessThan(50)
      expect(held).toEqual({
        database: { reachable: true, writable: true, note: expect.stringMatching(/^another connection holds the write lock/) },
        problems: [],
      })
      advance(DB_LOCK_DEGRADED_MS)
      const locked = await health.check()
      expect(locked.database).toMatchObject({ reachable: true, writable: false })
      expect(locked.problems).toEqual([
        {
          code: 'database/locked',
          message: expect.stringMatching(/^another connection has held the database's write lock for over/),
          source: 'api',
        },
      ])
      advance(DB_LOCK_RECHECK_MS)
      await health.check() // the same state: not logged again
      expect(lines).toEqual([expect.stringMatching(/^termkeep api: DEGRADED \(database\/locked\): /)])
    } finally {
      await lock.rollback()
      lock.close()
    }
    advance(DB_LOCK_RECHECK_MS) // found held: looked at again soon, not after DB_WRITE_PROBE_MS
    expect(await health.check()).toEqual({ database: { reachable: true, writable: true }, problems: [] })
    expect(lines).toEqual([lines[0], 'termkeep api: recovered: database/locked no longer applies'])
  })

  it('says not writable when the probe write fails otherwise', async () => {
    const empty = await openStorage({ url: `file:${join(dir, 'no-tables.db')}` }) // no health_probes table there
    try {
      const health = new StorageHealth({ client: storage.client, probe: empty.probe, writer: 'sidecar', log: () => {} })
      const report = await health.check()
      expect(report.database).toMatchObject({ reachable: true, writable: false, error: expect.stringContaining('health_probes') })
      expect(report.problems).toEqual([
        {
          code: 'database/not-writable',
          message: expect.stringMatching(/^the database cannot be written: .*no such table/),
          source: 'sidecar',
        },
      ])
    } finally {
      empty.close()
    }
  })

  it('shares one check among the callers that ask while it is under way', async () => {
    let executes = 0
    const counted = new Proxy(storage.client, {
      get: (target, key) =>
        key === 'execute'
          ? (...args: Parameters<typeof target.execute>) => (executes++, target.execute(...args))
          : Reflect.get(target, key),
    })
    const health = new StorageHealth({ client: counted, probe: counted, writer: 'api', log: () => {} })
    const reports = await Promise.all(Array.from({ length: 20 }, () => health.check()))
    expect(new Set(reports).size).toBe(1)
    expect(executes).toBe(2) // one SELECT 1, one probe write
  })

  it('finds the database file deleted, then replaced, under the open database, and names where the open file is', async () => {
    const file = DatabaseFile.opened(url)!
    expect(file.check()).toBeUndefined()
    const { health, lines } = subject(file)
    expect((await health.check()).problems).toEqual([])
    const path = join(dir, 'termkeep.db')
    const aside = join(dir, 'aside.db')
    renameSync(path, aside) // as good as deleted, for the path; kept to put it back
    try {
      const deleted = await health.check()
      expect(deleted.problems).toEqual([{ code: 'database/file-deleted', message: expect.stringContaining('deleted'), source: 'api' }])
      // The write still lands (in the open file): only the identity tells.
      expect(deleted.database.writable).toBe(true)
      const fd = /\/proc\/\d+\/fd\/\d+/.exec(lines.at(-1)!)?.[0]
      expect(fd).toBeDefined()
      expect(readFileSync(fd!).subarray(0, 15).toString()).toBe('SQLite format 3')
      copyFileSync(aside, path) // another file at the path now
      expect((await health.check()).problems.map((p) => p.code)).toEqual(['database/file-replaced'])
      expect(lines.slice(1)).toEqual([
        expect.stringMatching(/^termkeep api: DEGRADED \(database\/file-replaced\): /),
        'termkeep api: recovered: database/file-deleted no longer applies',
      ])
    } finally {
      rmSync(path, { force: true })
      renameSync(aside, path)
    }
    expect((await health.check()).problems).toEqual([])
  })

  it('reports every problem from the last report at once, checking in the background (the sidecar)', async () => {
    const { health } = subject()
    expect(health.current()).toBeUndefined() // nothing checked yet; a check starts
    await new Promise((r) => setTimeout(r, 50))
    expect(health.current()).toEqual({ database: { reachable: true, writable: true }, problems: [] })
  })

  it('does not check a database it cannot identify', () => {
    expect(DatabaseFile.opened('http://127.0.0.1:1')).toBeUndefined()
    expect(DatabaseFile.opened('file::memory:')).toBeUndefined()
  })
})
