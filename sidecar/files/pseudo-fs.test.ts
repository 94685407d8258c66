/** Which filesystems present state rather than stored files: decided by statfs and the mount table. */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { mountTypeOf, pseudoFilesystem } from './pseudo-fs.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-pseudo-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const devOf = (path: string) => statSync(path, { bigint: true }).dev

describe('mountTypeOf', () => {
  const table = [
    '22 27 0:21 / /proc rw,relatime - proc proc rw',
    '24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=123k,mode=755',
    '27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
    '30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw',
  ].join('\n')
  it.each([
    [21n, 'proc'],
    [6n, 'devtmpfs'],
    [254n << 8n, 'ext4'], // 254:0 in glibc's dev_t layout
    [27n, 'tmpfs'],
    [99n, undefined],
  ])('device %s is on %s', (dev, type) => {
    expect(mountTypeOf(table, dev)).toBe(type)
  })
})

describe('pseudoFilesystem on this machine', () => {
  it('names procfs and sysfs, and passes stored files (tmpfs included)', async () => {
    expect(await pseudoFilesystem('/proc/self/environ', devOf('/proc/self/environ'))).toBe('proc')
    expect(await pseudoFilesystem('/sys/kernel', devOf('/sys/kernel'))).toBe('sysfs')
    const file = join(dir, 'plain')
    writeFileSync(file, 'x')
    expect(await pseudoFilesystem(file, devOf(file))).toBeUndefined()
    expect(await pseudoFilesystem('/dev/shm', devOf('/dev/shm'))).toBeUndefined()
  })

  it('tells a devtmpfs from a tmpfs by the mount table, as the mount table says /dev is', async () => {
    const mounted = mountTypeOf(readFileSync('/proc/self/mountinfo', 'utf8'), devOf('/dev/null'))
    expect(await pseudoFilesystem('/dev/null', devOf('/dev/null'))).toBe(mounted === 'devtmpfs' ? 'devtmpfs' : undefined)
  })
})
