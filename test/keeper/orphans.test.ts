/**
 * Orphans after a keeper dies: programs that ignore SIGHUP outlive a keeper killed with -9; the
 * sidecar sees its keeper end (its terminals retire, their screens stay), starts a new keeper, and
 * that one kills them at its start, found by the identity the dead keeper wrote beside each
 * journal. Rows of terminals an earlier sidecar left (a release before the keeper, which held the
 * PTYs itself) are swept the same way at a sidecar's start; every process whose identity does not
 * match (a reused pid, another boot, a session without the terminal's marks) is left alone, even
 * where the pid does. Who is proven whose: identity.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { keeperPaths } from '../../local/keeper/paths.ts'
import { bootId, processStat } from '../../local/proc.ts'
import { hostGenerations, terminals } from '../../storage/tables.ts'
import { openStorage } from '../../storage/client.ts'
import { waitFor } from '../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp } from '../support/terminals.ts'

const alive = (pid: number) => processStat(pid)?.zombie === false

describe('a keeper killed with -9', () => {
  const work = mkdtempSync(join(tmpdir(), 'termkeep-orphans-'))
  const pidFile = (name: string) => join(work, `${name}.pid`)
  const shells = shellsFixture({
    // The shell itself is hung up with the PTY; what it started ignores SIGHUP and lives on: a
    // nohup'd sleep, and a loop that ignores it, with the children it keeps starting.
    orphaner: [
      `nohup sleep 1000 >/dev/null 2>&1 & echo $! > ${pidFile('nohup')}`,
      `(trap '' HUP; while :; do sleep 0.2; done) >/dev/null 2>&1 & echo $! > ${pidFile('loop')}`,
      'echo started',
      'exec sleep 1000',
    ].join('\n'),
    // A shell that ignores SIGHUP itself: it survives too, and with it its whole session.
    stubborn: `trap '' HUP; sleep 1000 & echo $! > ${pidFile('stubborn-child')}; echo started; exec sleep 1000`,
  })
  const strangers: ChildProcess[] = []
  let sidecar: RunningSidecar | undefined
  const killLater: number[] = []
  afterAll(async () => {
    await sidecar?.stop()
    for (const child of strangers) child.kill('SIGKILL')
    for (const pid of killLater) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone, as it should be
      }
    }
  })
  const pidOf = (name: string) => Number(readFileSync(pidFile(name), 'utf8'))
  const started = (name: string) => {
    try {
      return pidOf(name) > 0
    } catch {
      return false // not written yet
    }
  }

  it('leaves SIGHUP-ignoring programs running; the sidecar retires the terminals, the next keeper kills them', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-orphans-data-'))
    const env = { TERMKEEP_SHELLS_FILE: shells.shellsFile }
    sidecar = await startSidecar({ dataDir, env })
    await insertSession(sidecar.databaseUrl, 'orph', work)
    const http = new SidecarHttp(sidecar)
    for (const [tid, shell] of [
      ['t1', 'orphaner'],
      ['t2', 'stubborn'],
    ] as const) {
      expect(
        (await http.json('PUT', `/v1/sessions/orph/terminals/${tid}`, { json: { cols: 80, rows: 24, shell: shells.path(shell) } })).status,
      ).toBe(201)
    }
    await waitFor(async () => ['nohup', 'loop', 'stubborn-child'].every(started), 10_000, 'the programs to start')
    const storage = await openStorage({ url: sidecar.databaseUrl })
    try {
      const rows = await storage.db.select().from(terminals)
      for (const row of rows) {
        expect(row.leaderPid).toBeGreaterThan(0)
        expect(row.leaderStartTicks).toBe(processStat(row.leaderPid!)!.startTicks)
        expect(row.bootId).toBe(bootId())
      }
      const stubbornLeader = rows.find((r) => r.id === 't2')!.leaderPid!
      const orphans = [pidOf('nohup'), pidOf('loop'), stubbornLeader, pidOf('stubborn-child')]
      killLater.push(...orphans)

      const keeper = sidecar.keeperPid()!
      process.kill(keeper, 'SIGKILL')
      // The sidecar saw its keeper end: the terminals are retired (410 for a new reader) …
      for (const tid of ['t1', 't2']) {
        await waitFor(
          async () => (await http.json('GET', `/v1/sessions/orph/terminals/${tid}`)).body.state === 'retired',
          10_000,
          `${tid} retired`,
        )
      }
      expect((await http.fetch('GET', '/v1/sessions/orph/terminals/t1/output/watch?after=0')).status).toBe(410)
      expect(sidecar.output()).toContain('termkeep sidecar: the keeper ended; its 2 terminal(s) are retired')
      // … a new keeper runs, and it killed what the dead one's terminals left running.
      await waitFor(async () => (sidecar!.keeperPid() ?? keeper) !== keeper, 20_000, 'a new keeper')
      for (const pid of orphans) await waitFor(async () => !alive(pid), 10_000, `pid ${pid} to be killed`)
      const swept = /killed what a dead keeper's terminals left running \(orph\/t\d: [\d ]+; orph\/t\d: [\d ]+\)/
      await waitFor(async () => swept.test(readFileSync(keeperPaths(dataDir).log, 'utf8')), 5_000, 'the keeper to log its sweep')
      // Creating a terminal works again, in the new keeper.
      expect((await http.json('PUT', '/v1/sessions/orph/terminals/t3', { json: { cols: 80, rows: 24, shell: '/bin/sh' } })).status).toBe(
        201,
      )
    } finally {
      storage.close()
    }
  }, 90_000)

  it("at a sidecar's start, sweeps what an earlier sidecar's rows name, and nothing else", async () => {
    const dataDir = sidecar!.dataDir
    const storage = await openStorage({ url: sidecar!.databaseUrl })
    try {
      // A terminal a sidecar before the keeper held: its shell gone, a marked job left running.
      const legacy = spawn(
        'sh',
        ['-c', `trap '' HUP; TERMKEEP_SESSION_ID=orph TERMKEEP_TERMINAL_ID=legacy sleep 1000 & echo $! > ${pidFile('legacy')}; sleep 0.5`],
        { detached: true, stdio: 'ignore' },
      )
      strangers.push(legacy)
      const legacyTicks = processStat(legacy.pid!)!.startTicks
      // Rows whose pid is a live process whose identity does not match: never killed.
      const reused = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' }) // a session leader
      const elsewhere = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' })
      // A session whose leader is gone, whose member lacks the terminal's marks.
      const unmarked = spawn('sh', ['-c', `sleep 1000 & echo $! > ${pidFile('unmarked')}`], { detached: true, stdio: 'ignore' })
      strangers.push(reused, elsewhere, unmarked)
      await waitFor(async () => started('unmarked') && started('legacy'), 10_000, 'the sleeps')
      await waitFor(async () => !alive(unmarked.pid!) && !alive(legacy.pid!), 10_000, 'their leaders to exit')
      killLater.push(pidOf('legacy'), pidOf('unmarked'))
      const [{ generation }] = await storage.db.insert(hostGenerations).values({ pid: 1 }).returning()
      const base = {
        sessionId: 'orph',
        shellPath: '/bin/sh',
        shellArgs: [],
        cwd: work,
        cols: 80,
        rows: 24,
        state: 'running' as const,
        hostGeneration: generation!,
        bootId: bootId()!,
      }
      await storage.db.insert(terminals).values([
        { ...base, id: 'legacy', title: 'legacy', leaderPid: legacy.pid!, leaderStartTicks: legacyTicks },
        { ...base, id: 'reused', title: 'reused', leaderPid: reused.pid!, leaderStartTicks: processStat(reused.pid!)!.startTicks - 1 },
        {
          ...base,
          id: 'elsewhere',
          title: 'another boot',
          leaderPid: elsewhere.pid!,
          leaderStartTicks: processStat(elsewhere.pid!)!.startTicks,
          bootId: 'another-boot',
        },
        { ...base, id: 'unmarked', title: 'unmarked', leaderPid: unmarked.pid!, leaderStartTicks: 0 },
      ])
      await sidecar!.kill()
      sidecar = await startSidecar({ dataDir, databaseUrl: sidecar!.databaseUrl, env: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
      await waitFor(async () => !alive(pidOf('legacy')), 5_000, 'the legacy job to be killed')
      expect(sidecar.output()).toMatch(
        /termkeep sidecar: killed 1 process\(es\) an earlier keeper left running in 1 terminal\(s\) \(orph\/legacy: \d+\)/,
      )
      for (const pid of [reused.pid!, elsewhere.pid!, pidOf('unmarked')]) expect(alive(pid), `stranger ${pid}`).toBe(true)
      const states = await storage.db.select({ id: terminals.id, state: terminals.state }).from(terminals)
      // t3 lives on in the keeper (adopted); every other row is retired.
      expect(states.filter((r) => r.state !== 'retired').map((r) => r.id)).toEqual(['t3'])
    } finally {
      storage.close()
    }
  }, 60_000)
})
