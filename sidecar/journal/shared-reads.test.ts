/** Shared spool reads against a real spool file: one read per range, exact bytes, leases that
 * keep a pooled buffer from reuse, failures and idleness that leave nothing kept. */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SharedReads } from './shared-reads.ts'
import { Spool } from './spool.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-shared-reads-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A real spool that counts the reads that reach the file. */
class CountingSpool extends Spool {
  reads = 0
  override readAt(offset: number, length: number, buffer?: Buffer): Promise<Buffer> {
    this.reads++
    return super.readAt(offset, length, buffer)
  }
}

let n = 0
function spoolOf(content: Buffer): { spool: CountingSpool; reads: SharedReads; path: string } {
  const path = join(dir, `s${++n}`)
  writeFileSync(path, content)
  const spool = new CountingSpool()
  spool.open(path)
  return { spool, reads: new SharedReads(spool), path }
}

const content = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7 + (i >> 8)) & 0xff))

describe('SharedReads', () => {
  it('serves readers of one range, or of a range inside it, from one read', async () => {
    const { spool, reads } = spoolOf(content)
    const [a, b, c] = await Promise.all([reads.read(1000, 50_000), reads.read(1000, 50_000), reads.read(2000, 10_000)])
    expect(spool.reads).toBe(1)
    expect(a.bytes.equals(content.subarray(1000, 51_000))).toBe(true)
    expect(b.bytes.equals(content.subarray(1000, 51_000))).toBe(true)
    expect(c.bytes.equals(content.subarray(2000, 12_000))).toBe(true)
    // Past what was read: a read of its own, of only what was asked for.
    const d = await reads.read(40_000, 20_000)
    expect(spool.reads).toBe(2)
    expect(d.bytes.length).toBe(20_000)
    expect(d.bytes.equals(content.subarray(40_000, 60_000))).toBe(true)
    for (const lease of [a, b, c, d]) lease.release()
  })

  it('never reuses a buffer a reader still holds, however many reads follow', async () => {
    const { reads } = spoolOf(content)
    const held = await reads.read(0, 100_000)
    expect(held.pooled).toBe(true)
    for (let round = 0; round < 20; round++) {
      const offset = 100_000 + (round % 4) * 40_000
      const lease = await reads.read(offset, 40_000)
      expect(lease.bytes.equals(content.subarray(offset, offset + 40_000))).toBe(true)
      lease.release()
    }
    expect(held.bytes.equals(content.subarray(0, 100_000))).toBe(true)
    held.release()
    // Released and no longer kept: its buffer serves later reads, whose bytes are theirs.
    const later = await reads.read(200_000, 100_000)
    expect(later.bytes.equals(content.subarray(200_000, 300_000))).toBe(true)
    later.release()
  })

  it('keeps no failed read: the next reader reads again', async () => {
    const { spool, reads, path } = spoolOf(content.subarray(0, 1000))
    await expect(reads.read(500, 1000)).rejects.toThrow(/short read/)
    appendFileSync(path, content.subarray(1000, 2000))
    const lease = await reads.read(500, 1000)
    expect(spool.reads).toBe(2)
    expect(lease.bytes.equals(content.subarray(500, 1500))).toBe(true)
    lease.release()
  })

  it('lets go of its reads once nobody read for a while, and on clear', async () => {
    const { spool, reads } = spoolOf(content)
    ;(await reads.read(0, 10_000)).release()
    ;(await reads.read(0, 10_000)).release()
    expect(spool.reads).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 300))
    ;(await reads.read(0, 10_000)).release()
    expect(spool.reads).toBe(2)
    reads.clear()
    ;(await reads.read(0, 10_000)).release()
    expect(spool.reads).toBe(3)
  })
})
