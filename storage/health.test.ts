/**
 * Database health on a real file database: a write proves writability (a lock held elsewhere
 * makes it fail where `SELECT 1` still answers), at most once per DB_WRITE_PROBE_MS; the file
 * check finds a deleted or replaced database file; each change of state is logged once.
 */
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DB_WRITE_PROBE_MS } from '../schema/limits.ts'
import { openStorage, type Storage } from './client.ts'
import { DatabaseFile } from './file-identity.ts'
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
  const health = new StorageHealth({ client: storage.client, writer: 'api', log: (l) => lines.push(l), now: () => now, file: file && (() => file.check()) })
  const probes = async () => Number((await other.client.execute(`SELECT checked_at FROM health_probes WHERE writer = 'api'`)).rows[0]?.[0] ?? 0)
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

  it('says not writable while another connection holds the write lock, once in the log, and recovers', async () => {
    const { health, lines, advance } = subject()
    await health.check()
    const lock = await other.client.transaction('write')
    try {
      await lock.execute(`INSERT INTO health_probes (writer, checked_at) VALUES ('lock', 1) ON CONFLICT DO NOTHING`)
      advance(DB_WRITE_PROBE_MS)
      const locked = await health.check()
      // `SELECT 1` still answers: only the write tells.
      expect(locked.database).toMatchObject({ reachable: true, writable: false })
      expect(locked.problems).toEqual([{ code: 'database/not-writable', message: expect.stringMatching(/^the database cannot be written: .*(locked|busy)/i), source: 'api' }])
      advance(1)
      await health.check() // the same state: not logged again
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^termkeep api: DEGRADED \(database\/not-writable\): the database cannot be written: /)
    } finally {
      await lock.rollback()
      lock.close()
    }
    advance(DB_WRITE_PROBE_MS)
    expect(await health.check()).toEqual({ database: { reachable: true, writable: true }, problems: [] })
    expect(lines).toEqual([lines[0], 'termkeep api: recovered: database/not-writable no longer applies'])
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
