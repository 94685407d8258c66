/**
 * killSession with real processes: a stranger that holds the recorded pid, session id or process
 * group id (a pid reused after the terminal's shell exited, which then called setsid or setpgrp)
 * survives; a session whose shell is gone loses exactly the members that carry the terminal's
 * marks, SIGHUP-ignoring loops and their children included. A real terminal's close:
 * terminals/lifecycle.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../support/ports.ts'
import { bootId, type TerminalIdentity } from '../../keeper/identity.ts'
import { killSession } from '../../keeper/kill.ts'
import { allProcesses, processStat } from '../../local/proc.ts'

const work = mkdtempSync(join(tmpdir(), 'termkeep-kill-'))
const started: ChildProcess[] = []
const alive = (pid: number) => processStat(pid)?.zombie === false
/** A signal sent is delivered within moments; a survivor can only be seen by looking after them. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 300))
const pidIn = (file: string) => {
  try {
    return Number(readFileSync(join(work, file), 'utf8').trim()) || undefined
  } catch {
    return undefined // not written yet
  }
}

/** Starts `script` as a session leader of its own (setsid), with `env` added. */
function leader(script: string, env: Record<string, string> = {}): ChildProcess {
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore', cwd: work, env: { ...process.env, ...env } })
  started.push(child)
  return child
}

/** The identity a terminal would have recorded for a shell with `pid` started before `startTicks`. */
const recordedBefore = (pid: number, startTicks: number, id = 't'): TerminalIdentity => ({
  sessionId: 's',
  id,
  leaderPid: pid,
  leaderStartTicks: startTicks - 1,
  bootId: bootId()!,
})

afterAll(() => {
  for (const child of started) {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // gone
    }
  }
  const left = ['stranger-child', 'marked-loop', 'unmarked-child'].map(pidIn).filter((pid): pid is number => pid !== undefined)
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone
    }
  }
})

describe('killSession', () => {
  it('leaves alone a stranger that reused the pid and leads its own session (setsid)', async () => {
    const stranger = leader('exec sleep 1000')
    await waitFor(async () => alive(stranger.pid!), 5_000, 'the stranger')
    const stat = processStat(stranger.pid!)!
    expect([stat.session, stat.pgrp]).toEqual([stranger.pid, stranger.pid])
    expect(await killSession(recordedBefore(stranger.pid!, stat.startTicks), 100)).toEqual([])
    await settled()
    expect(alive(stranger.pid!)).toBe(true)
  })

  it('leaves alone a stranger whose process group id is the recorded pid (setpgrp) in another session', async () => {
    const holder = leader(`perl -e 'setpgrp(0,0); exec "sleep", "1000"' & echo $! > stranger-group; wait`)
    await waitFor(
      async () => pidIn('stranger-group') !== undefined && processStat(pidIn('stranger-group')!)?.pgrp === pidIn('stranger-group'),
      5_000,
      'the setpgrp stranger',
    )
    const pid = pidIn('stranger-group')!
    const stat = processStat(pid)!
    expect([stat.pgrp, stat.session]).toEqual([pid, holder.pid])
    expect(await killSession(recordedBefore(pid, stat.startTicks), 100)).toEqual([])
    await settled()
    expect(alive(pid)).toBe(true)
  })

  it("with the recorded shell gone, leaves alone a stranger's session that holds its id", async () => {
    // A stranger took the pid, called setsid, started a child and exited: the child keeps the sid.
    const stranger = leader('sleep 1000 & echo $! > stranger-child')
    await waitFor(async () => pidIn('stranger-child') !== undefined && !alive(stranger.pid!), 5_000, 'the stranger to leave its child')
    const child = pidIn('stranger-child')!
    expect(processStat(child)!.session).toBe(stranger.pid)
    expect(await killSession(recordedBefore(stranger.pid!, processStat(child)!.startTicks - 100), 100)).toEqual([])
    await settled()
    expect(alive(child)).toBe(true)
  })

  it("with the shell gone, kills the members that carry the terminal's marks (a trap '' HUP loop and its children), no other", async () => {
    const marks = { TERMKEEP_SESSION_ID: 's', TERMKEEP_TERMINAL_ID: 'marked' }
    const script = [
      `(trap '' HUP; while :; do sleep 0.1; done) & echo $! > marked-loop`,
      // A member that is not the terminal's by its marks (here: they were cleared) stays.
      `env -u TERMKEEP_TERMINAL_ID sleep 1000 & echo $! > unmarked-child`,
    ].join('\n')
    const shell = leader(script, marks)
    const shellStart = processStat(shell.pid!)?.startTicks
    await waitFor(
      async () => pidIn('marked-loop') !== undefined && pidIn('unmarked-child') !== undefined && !alive(shell.pid!),
      5_000,
      'the shell to exit',
    )
    const loop = pidIn('marked-loop')!
    const unmarked = pidIn('unmarked-child')!
    const identity = { ...recordedBefore(shell.pid!, (shellStart ?? processStat(loop)!.startTicks) + 1, 'marked') }
    const loopChildren = () =>
      allProcesses()
        .filter((p) => p.ppid === loop)
        .map((p) => p.pid)
    await waitFor(async () => loopChildren().length > 0, 5_000, "the loop's sleep")
    const children = loopChildren()
    expect(await killSession(identity, 100)).toEqual([])
    for (const pid of [loop, ...children]) expect(alive(pid), `pid ${pid}`).toBe(false)
    expect(alive(unmarked)).toBe(true)
  })
})
