/**
 * A full disk under the database, for real (a 4 MiB tmpfs; the test needs `mount`, as root, and
 * says so and skips where it cannot): a writer's write fails with SQLITE_FULL while `SELECT 1`
 * answers, so health must learn it from the writer (sidecar/write-retry.ts → WriteFailures), not from
 * its probe; the free-space check says it too; both clear once there is room and the write lands.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../support/ports.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { lowSpace } from '../../storage/node/free-space.ts'
import { StorageHealth } from '../../storage/health.ts'
import { migrate } from '../../storage/migrate.ts'
import { WriteFailures } from '../../storage/write-failures.ts'
import { Retry } from '../../sidecar/write-retry.ts'

const MiB = 1024 * 1024
const root = mkdtempSync(join(tmpdir(), 'termkeep-full-db-'))
const mnt = join(root, 'mnt')
mkdirSync(mnt)
let mounted = false
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt], { stdio: 'ignore' })
  mounted = true
} catch (error) {
  console.warn(`full-disk-health.test.ts: cannot mount a tmpfs here (${(error as Error).message.split('\n')[0]}); skipped`)
}

describe.skipIf(!mounted)('health on a full disk under the database', () => {
  let storage: Storage
  beforeAll(async () => {
    storage = await openStorage({ url: `file:${join(mnt, 'termkeep.db')}`, busyTimeoutMs: 100 })
    await migrate(storage.client)
    await storage.client.execute('CREATE TABLE filler (x BLOB)')
  })
  afterAll(() => {
    storage?.close()
    if (mounted) execFileSync('umount', ['-l', mnt])
    rmSync(root, { recursive: true, force: true })
  })

  it("says storage/disk-full from a writer's real SQLITE_FULL, not writable, and clears once the write lands", async () => {
    const writes = new WriteFailures()
    const lines: string[] = []
    const health = new StorageHealth({
      client: storage.client,
      probe: storage.probe,
      writer: 'sidecar',
      space: () => lowSpace([mnt], MiB),
      writes,
      log: (line) => lines.push(line),
    })
    expect((await health.check()).problems).toEqual([])
    // Fill the file system: one large file, then small ones until nothing fits.
    const ballast = join(mnt, 'ballast')
    mkdirSync(ballast)
    try {
      writeFileSync(join(ballast, 'big'), Buffer.alloc(3 * MiB))
      for (let i = 0; ; i++) writeFileSync(join(ballast, `small-${i}`), Buffer.alloc(16 * 1024))
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC')
    }
    // The writer: a real 512 KiB write, waited out with the sidecar's one retry mechanism.
    const retry = new Retry('writing a test revision', 50, writes)
    let landed = false
    let failure: unknown
    const write = async (): Promise<void> => {
      try {
        await storage.client.execute({ sql: 'INSERT INTO filler (x) VALUES (?)', args: [new Uint8Array(512 * 1024)] })
        retry.succeeded()
        landed = true
      } catch (error) {
        failure = error
        retry.failed(error, () => void write())
      }
    }
    await write()
    expect(String((failure as Error)?.message)).toMatch(/SQLITE_FULL|disk is full/)
    const full = await health.check()
    // `SELECT 1` still answers; the writer's failure tells.
    expect(full.database).toMatchObject({ reachable: true, writable: false })
    expect(full.problems.map((p) => p.code)).toEqual(expect.arrayContaining(['storage/disk-full', 'storage/low-space']))
    expect(full.problems.find((p) => p.code === 'storage/disk-full')).toEqual({
      code: 'storage/disk-full',
      message: expect.stringContaining('lack of space'),
      source: 'sidecar',
    })
    expect(lines.join('\n')).toMatch(
      /DEGRADED \(storage\/disk-full\): .*\[1 writer\(s\) failing; the latest: writing a test revision: SQLITE_FULL/,
    )

    rmSync(ballast, { recursive: true })
    await waitFor(async () => landed, 10_000, 'the retried write to land')
    expect(await health.check()).toEqual({ database: { reachable: true, writable: true }, problems: [] })
    expect(lines).toEqual(
      expect.arrayContaining([
        'termkeep sidecar: recovered: storage/disk-full no longer applies',
        'termkeep sidecar: recovered: storage/low-space no longer applies',
      ]),
    )
    retry.cancel()
  })
})
