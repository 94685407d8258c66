/**
 * The embedded database client after a failed write. libsql never resets a statement that failed
 * (SQLITE_BUSY under another process's lock, say); while it stays active SQLite defers the commit
 * of every later autocommit write on that connection, which then never lands. The patch in
 * patches/@libsql+client+*.patch drops such a connection from the pool.
 */
import { linkSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openStorage } from './client.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-client-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('openStorage (embedded file)', () => {
  it.each(['execute', 'batch'] as const)('commits the writes that follow a write that failed under a lock (%s)', async (how) => {
    const url = `file:${join(dir, `${how}.db`)}`
    const writer = await openStorage({ url, busyTimeoutMs: 100 })
    const other = await openStorage({ url })
    try {
      await writer.client.execute('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)')
      await writer.client.execute("INSERT INTO t VALUES (1, 'before')")
      const lock = await other.client.transaction('write')
      await lock.execute('UPDATE t SET v = v WHERE id = 0')
      const failed =
        how === 'execute'
          ? writer.client.execute("UPDATE t SET v = 'refused' WHERE id = 1")
          : writer.client.batch(["UPDATE t SET v = 'refused' WHERE id = 1", "INSERT INTO t VALUES (2, 'refused')"], 'deferred')
      await expect(failed).rejects.toMatchObject({ code: 'SQLITE_BUSY' })
      await lock.rollback()
      await writer.client.execute("UPDATE t SET v = 'after' WHERE id = 1")
      // Seen from a connection of its own: the write was committed, not left pending.
      const reader = await openStorage({ url })
      try {
        expect((await reader.client.execute('SELECT v FROM t ORDER BY id')).rows.map((r) => r.v)).toEqual(['after'])
      } finally {
        reader.close()
      }
    } finally {
      writer.close()
      other.close()
    }
  })
})

describe('shutdown (embedded file)', () => {
  it('empties the write-ahead log before closing: a hard link made to it keeps no database page', async () => {
    const file = join(dir, 'wal.db')
    const storage = await openStorage({ url: `file:${file}` })
    const marker = `wal-marker-${Math.random().toString(36).slice(2)}`
    await storage.client.execute('CREATE TABLE t (v TEXT)')
    await storage.client.execute({ sql: 'INSERT INTO t VALUES (?)', args: [marker] })
    const link = join(dir, 'wal-link')
    linkSync(`${file}-wal`, link)
    expect(readFileSync(link).includes(marker)).toBe(true)
    await storage.shutdown()
    expect(readFileSync(link)).toHaveLength(0)
    // Nothing was lost: the rows are in the database file.
    const again = await openStorage({ url: `file:${file}` })
    expect((await again.client.execute('SELECT v FROM t')).rows.map((r) => r.v)).toEqual([marker])
    again.close()
  })
})
