import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DataDirBusy, lockDataDir } from './data-dir-lock.ts'

const dirs: string[] = []
const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-lock-'))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe('lockDataDir', () => {
  it('takes a free directory, refuses it while a live process holds it, and gives it back', () => {
    const dir = fresh()
    const release = lockDataDir(dir)
    expect(readFileSync(join(dir, 'sidecar.pid'), 'utf8').trim()).toBe(String(process.pid))
    // Held by another live process (the test runner's parent stands in for another sidecar).
    writeFileSync(join(dir, 'sidecar.pid'), `${process.ppid}\n`)
    expect(() => lockDataDir(dir)).toThrow(DataDirBusy)
    expect(() => lockDataDir(dir)).toThrow(`pid ${process.ppid}`)
    writeFileSync(join(dir, 'sidecar.pid'), `${process.pid}\n`)
    release()
    expect(existsSync(join(dir, 'sidecar.pid'))).toBe(false)
  })

  it('takes over from a holder that is gone (a crashed sidecar) or a garbled file', () => {
    const dir = fresh()
    const gone = spawnSync(process.execPath, ['-e', 'process.pid']).pid!
    for (const content of [`${gone}\n`, 'not a pid', '']) {
      writeFileSync(join(dir, 'sidecar.pid'), content)
      const release = lockDataDir(dir)
      expect(readFileSync(join(dir, 'sidecar.pid'), 'utf8').trim()).toBe(String(process.pid))
      release()
    }
  })
})
