import { chmodSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ensureDataDir } from './data-dir.ts'

describe('ensureDataDir', () => {
  const parent = mkdtempSync(join(tmpdir(), 'termkeep-datadir-'))

  it('creates a missing directory readable by its owner only, whatever the umask', () => {
    const dir = join(parent, 'new', 'data')
    const umask = process.umask(0o002)
    try {
      expect(ensureDataDir(dir)).toBeUndefined()
    } finally {
      process.umask(umask)
    }
    expect(statSync(dir).mode & 0o777).toBe(0o700)
  })

  it('leaves an existing open directory as it is, and says so', () => {
    const dir = join(parent, 'shared')
    ensureDataDir(dir)
    chmodSync(dir, 0o755)
    expect(ensureDataDir(dir)).toMatch(/open to other users \(mode 755\).*chmod 700/)
    expect(statSync(dir).mode & 0o777).toBe(0o755)
  })
})
