/**
 * A keeper ends by itself once it has nothing to keep: no terminal and no sidecar for
 * its idle time (nothing lingers on a machine that stopped using termkeep). A terminal keeps it
 * running however long no sidecar comes; once that terminal is released, it goes too. Real keeper
 * processes, watched by pid (test/support/keepers.ts), with TERMKEEP_KEEPER_IDLE_EXIT_MS shorter
 * than the default KEEPER_IDLE_EXIT_MS (10 s) so that the file does not wait it out three times.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keeperPaths } from '../../local/keeper/paths.ts'
import { reachKeeper } from '../../local/keeper/start.ts'
import { keeperPid, stopKeeper, watchKeeper } from '../support/keepers.ts'
import { waitFor } from '../support/ports.ts'
import { alive } from '../support/serve.ts'

const software = 'test'
const IDLE_EXIT_MS = 3_000
// The keepers this file starts are started from this process and take the setting from it.
process.env.TERMKEEP_KEEPER_IDLE_EXIT_MS = String(IDLE_EXIT_MS)
const work = mkdtempSync(join(tmpdir(), 'termkeep-keeper-idle-'))
const idleDir = join(work, 'idle')
const keptDir = join(work, 'kept')
/** How late an idle exit may come on a loaded machine (the check runs every second). */
const SLACK_MS = 10_000
const IDLE_LINE = 'stopping (no terminal and no sidecar)'

const connect = (dataDir: string, role: 'sidecar' | 'control') => reachKeeper(dataDir, { role, software, start: true })
const log = (dataDir: string) => readFileSync(keeperPaths(dataDir).log, 'utf8')

let idleKeeper = 0
let keptKeeper = 0
let sleeper = 0
let sidecarLeftAt = 0

beforeAll(async () => {
  watchKeeper(idleDir)
  watchKeeper(keptDir)
  // Both keepers start at once: the idle one's clock runs while the other is set up.
  const [idle, kept] = await Promise.all([connect(idleDir, 'control'), connect(keptDir, 'sidecar')])
  idleKeeper = idle.keeper.pid
  idle.close()
  keptKeeper = kept.keeper.pid
  const terminal = await kept.request('spawn', {
    sessionId: 's',
    terminalId: 'sleeper',
    options: { file: '/bin/sleep', args: ['600'], cwd: work, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, cols: 80, rows: 24 },
  })
  sleeper = terminal.pid
  kept.close()
  sidecarLeftAt = Date.now()
})

afterAll(async () => {
  await Promise.all([stopKeeper(idleDir), stopKeeper(keptDir)])
  rmSync(work, { recursive: true, force: true })
})

describe('a keeper', () => {
  it(`with no terminal and no sidecar exits by itself after ${IDLE_EXIT_MS / 1000} s, and says why`, async () => {
    expect(alive(idleKeeper)).toBe(true)
    await waitFor(async () => !alive(idleKeeper), IDLE_EXIT_MS + SLACK_MS, 'the idle keeper to exit')
    expect(keeperPid(idleDir)).toBeUndefined()
    expect(log(idleDir)).toContain(IDLE_LINE)
  })

  it("runs with glibc's malloc settings of its own, which its terminals do not inherit", () => {
    const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
    expect(environ(keptKeeper)).toEqual(expect.arrayContaining(['MALLOC_ARENA_MAX=2', 'MALLOC_MMAP_THRESHOLD_=131072']))
    expect(environ(sleeper).filter((v) => v.startsWith('MALLOC_'))).toEqual([])
  })

  it('with a running terminal stays however long no sidecar comes; released, it exits by itself too', async () => {
    const wait = sidecarLeftAt + IDLE_EXIT_MS + 2_000 - Date.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    expect([alive(keptKeeper), alive(sleeper)]).toEqual([true, true])
    expect(log(keptDir)).not.toContain(IDLE_LINE)

    const sidecar = await connect(keptDir, 'sidecar')
    try {
      expect(sidecar.keeper.pid).toBe(keptKeeper)
      const [terminal] = await sidecar.request('list', {})
      expect(terminal?.pid).toBe(sleeper)
      await sidecar.request('release', { id: terminal!.id })
      expect(alive(sleeper)).toBe(false)
    } finally {
      sidecar.close()
    }
    await waitFor(async () => !alive(keptKeeper), IDLE_EXIT_MS + SLACK_MS, 'the keeper to exit once its terminal is gone')
    expect(log(keptDir)).toContain(IDLE_LINE)
  })
})
