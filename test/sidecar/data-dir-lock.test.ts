import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { lockDataDir, SIDECAR_ENTRY } from '../../sidecar/data-dir-lock.ts'

const LOCK = fileURLToPath(new URL('../../sidecar/data-dir-lock.ts', import.meta.url))
const dirs: string[] = []
const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-lock-'))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A process that tries to take `dir`, prints
 * "got" or "busy", and holds what it got for `holdMs`. */
function contender(dir: string, holdMs: number) {
  const script = `import { lockDataDir } from ${JSON.stringify(LOCK)}
try { lockDataDir(${JSON.stringify(dir)}); console.log('got'); setTimeout(() => {}, ${holdMs}) } catch (e) { console.log(e.name === 'DataDirBusy' ? 'busy' : String(e)) }`
  // Its command line names the sidecar's entry, as a real sidecar's does.
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, `${SIDECAR_ENTRY}.ts`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  const said = new Promise<string>((resolve) => child.stdout!.once('data', () => setTimeout(() => resolve(out.trim()), 20)))
  return { child, said }
}

describe('lockDataDir', () => {
  it('takes a free directory, refuses it while a live sidecar holds it, and gives it back', async () => {
    const dir = fresh()
    const first = contender(dir, 5000)
    expect(await first.said).toBe('got')
    try {
      expect(await contender(dir, 0).said).toBe('busy')
      expect(() => lockDataDir(dir)).toThrow(`pid ${first.child.pid}`)
    } finally {
      first.child.kill('SIGKILL')
    }
    // Its sidecar gone, the directory is free again; a release leaves nothing behind.
    await new Promise((resolve) => first.child.once('exit', resolve))
    const release = lockDataDir(dir)
    expect(readFileSync(join(dir, 'sidecar.pid'), 'utf8').trim()).toBe(String(process.pid))
    release()
    expect(existsSync(join(dir, 'sidecar.pid'))).toBe(false)
    expect(readdirSync(dir)).toEqual([])
  })

  it('lets exactly one of several starters in, however they race', async () => {
    for (let round = 0; round < 5; round++) {
      const dir = fresh()
      // Half the rounds start from a crashed sidecar's file.
      if (round % 2 === 1) writeFileSync(join(dir, 'sidecar.pid'), `${spawnSync(process.execPath, ['-e', '0']).pid}\n`)
      const racers = [contender(dir, 3000), contender(dir, 3000), contender(dir, 3000)]
      const said = await Promise.all(racers.map((r) => r.said))
      for (const r of racers) r.child.kill('SIGKILL')
      expect(said.sort(), `round ${round}`).toEqual(['busy', 'busy', 'got'])
    }
  }, 60_000)

  it('takes over from a holder that is gone, a pid reused by another program, or a garbled file', () => {
    const dir = fresh()
    const gone = spawnSync(process.execPath, ['-e', 'process.pid']).pid!
    // process.ppid is alive but not a sidecar (as a pid reused after a reboot would be).
    for (const content of [`${gone}\n`, `${process.ppid}\n`, 'not a pid', '']) {
      writeFileSync(join(dir, 'sidecar.pid'), content)
      const release = lockDataDir(dir)
      expect(readFileSync(join(dir, 'sidecar.pid'), 'utf8').trim()).toBe(String(process.pid))
      release()
    }
  })
})
