/**
 * Orphans after a crash: programs that ignore SIGHUP outlive a sidecar killed with -9; the next
 * sidecar kills them at start, found by the identity the terminal's row recorded, and leaves alone
 * every process whose identity does not match (a reused pid, another boot, a session without the
 * terminal's marks), even where the pid does. Who is proven whose: identity.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { hostGenerations, terminals } from '../../../storage/tables.ts'
import { openStorage } from '../../../storage/client.ts'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp } from '../../support/terminals.ts'
import { bootId } from '../../../sidecar/pty/identity.ts'
import { processStat } from '../../../sidecar/pty/process-tree.ts'

const alive = (pid: number) => processStat(pid)?.zombie === false

describe('a sidecar killed with -9', () => {
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
  afterAll(async () => {
    await sidecar?.stop()
    for (const child of strangers) child.kill('SIGKILL')
  })

  it('leaves SIGHUP-ignoring programs running; the next sidecar kills them, and nothing else', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-orphans-data-'))
    const env = { TERMKEEP_SHELLS_FILE: shells.shellsFile }
    const first = await startSidecar({ dataDir, env })
    await insertSession(first.databaseUrl, 'orph', work)
    const http = new SidecarHttp(first)
    for (const [tid, shell] of [
      ['t1', 'orphaner'],
      ['t2', 'stubborn'],
    ] as const) {
      expect(
        (await http.json('PUT', `/v1/sessions/orph/terminals/${tid}`, { json: { cols: 80, rows: 24, shell: shells.path(shell) } })).status,
      ).toBe(201)
    }
    const pidOf = (name: string) => Number(readFileSync(pidFile(name), 'utf8'))
    const started = (name: string) => {
      try {
        return pidOf(name) > 0
      } catch {
        return false // not written yet
      }
    }
    await waitFor(async () => ['nohup', 'loop', 'stubborn-child'].every(started), 10_000, 'the programs to start')
    const storage = await openStorage({ url: first.databaseUrl })
    let orphans: number[] = []
    try {
      const rows = await storage.db.select().from(terminals)
      for (const row of rows) {
        expect(row.leaderPid).toBeGreaterThan(0)
        expect(row.leaderStartTicks).toBe(processStat(row.leaderPid!)!.startTicks)
        expect(row.bootId).toBe(bootId())
      }
      const stubbornLeader = rows.find((r) => r.id === 't2')!.leaderPid!

      await first.kill()
      await new Promise((r) => setTimeout(r, 500))
      // They outlived the sidecar (the orphaner's shell itself was hung up).
      orphans = [pidOf('nohup'), pidOf('loop'), stubbornLeader, pidOf('stubborn-child')]
      for (const pid of orphans) expect(alive(pid), `pid ${pid}`).toBe(true)
      expect(alive(rows.find((r) => r.id === 't1')!.leaderPid!)).toBe(false)

      // Rows whose pid is a live process whose identity does not match: never killed.
      const reused = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' }) // a session leader
      const elsewhere = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' })
      // A session whose leader is gone, whose member lacks the terminal's marks.
      const unmarked = spawn('sh', ['-c', `sleep 1000 & echo $! > ${pidFile('unmarked')}`], { detached: true, stdio: 'ignore' })
      strangers.push(reused, elsewhere, unmarked)
      await waitFor(async () => started('unmarked'), 10_000, 'the unmarked sleep')
      await waitFor(async () => !alive(unmarked.pid!), 10_000, 'its leader to exit')
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

      sidecar = await startSidecar({ dataDir, env })
      for (const pid of orphans) await waitFor(async () => !alive(pid), 5_000, `pid ${pid} to be killed`)
      expect(sidecar.output()).toMatch(
        /termkeep sidecar: killed \d+ process\(es\) an earlier sidecar left running in 2 terminal\(s\) \(orph\/t1: [\d ]+; orph\/t2: [\d ]+\)/,
      )
      for (const pid of [reused.pid!, elsewhere.pid!, pidOf('unmarked')]) expect(alive(pid), `stranger ${pid}`).toBe(true)
      const states = await storage.db.select({ id: terminals.id, state: terminals.state }).from(terminals)
      expect(states.every((r) => r.state === 'retired')).toBe(true)
    } finally {
      storage.close()
      // Whatever a failed run left (killed already, as it should be, when it passed).
      for (const pid of [...orphans, ...(started('unmarked') ? [pidOf('unmarked')] : [])]) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // gone
        }
      }
    }
  }, 60_000)
})
