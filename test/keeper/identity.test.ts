/**
 * Who is proven a terminal's (identity.ts), table-driven over made-up process tables: the whole
 * session while its shell runs with the recorded start time; with the shell gone, only marked
 * members started after it, what an earlier look proved, and their children; nothing for a reused
 * pid or another boot.
 */
import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { bootId, leaderIdentity, membersOf, ticksSinceBoot, type Proven, type TerminalIdentity } from '../../keeper/identity.ts'
import { processStat, type ProcessStat } from '../../local/proc.ts'

describe('membersOf', () => {
  const boot = bootId()!
  const terminal: TerminalIdentity = { sessionId: 's', id: 't', leaderPid: 100, leaderStartTicks: 5000, bootId: boot }
  const proc = (pid: number, session: number, startTicks: number, ppid = 1): ProcessStat => ({
    pid,
    ppid,
    pgrp: session,
    session,
    startTicks,
    zombie: false,
  })
  const marked = (pids: number[]) => (pid: number) =>
    pids.includes(pid) ? ['TERMKEEP_SESSION_ID=s', 'TERMKEEP_TERMINAL_ID=t', 'HOME=/x'] : ['HOME=/x']

  it('takes the whole session while its shell runs with the recorded start time', () => {
    const processes = [proc(100, 100, 5000), proc(101, 100, 5010), proc(102, 100, 6000), proc(200, 200, 10)]
    expect(membersOf(terminal, processes, new Map(), marked([]))).toEqual([100, 101, 102])
  })

  it("takes the shell before its setsid() (still in the sidecar's session), by its pid and start time", () => {
    const processes = [proc(100, 50, 5000, 50), proc(50, 50, 10), proc(101, 50, 5000, 50)]
    expect(membersOf(terminal, processes, new Map(), marked([]))).toEqual([100])
    // Another process in that session with the shell's pid but not its start time is a stranger.
    expect(membersOf(terminal, [proc(100, 50, 9000, 50)], new Map(), marked([]))).toEqual([])
  })

  it('takes nothing when the pid now names a process started at another time (a reused pid)', () => {
    const processes = [proc(100, 100, 9000), proc(101, 100, 9010)]
    expect(membersOf(terminal, processes, new Map(), marked([100, 101]))).toEqual([])
  })

  it("with the shell gone, takes only members that carry the terminal's marks and started after it", () => {
    const processes = [proc(101, 100, 5010), proc(102, 100, 7000), proc(103, 100, 4000), proc(104, 100, 8000)]
    expect(membersOf(terminal, processes, new Map(), marked([101, 102, 103]))).toEqual([101, 102])
  })

  it('with the shell gone, a session id alone (a stranger that reused the pid and left) proves nothing', () => {
    const processes = [proc(101, 100, 9000), proc(102, 100, 9010, 101)]
    expect(membersOf(terminal, processes, new Map(), marked([]))).toEqual([])
  })

  it('keeps what an earlier look proved, and takes the children of proven processes', () => {
    const proven: Proven = new Map()
    // First look: the shell runs; 101 cleared its environment (no marks).
    expect(membersOf(terminal, [proc(100, 100, 5000), proc(101, 100, 5010, 100)], proven, marked([]))).toEqual([100, 101])
    // Second look: the shell is gone; 101 is known (same pid and start), 102 is its new child,
    // 103 its grandchild; 104 reuses a proven pid with another start time and 105 is its child.
    const later = [
      proc(101, 100, 5010),
      proc(102, 100, 5020, 101),
      proc(103, 100, 5030, 102),
      proc(104, 100, 9000),
      proc(105, 100, 9010, 104),
    ]
    proven.set(104, 5040)
    expect(membersOf(terminal, later, proven, marked([]))).toEqual([101, 102, 103])
    expect(proven.get(103)).toBe(5030)
  })

  it('takes nothing recorded on another boot', () => {
    expect(membersOf({ ...terminal, bootId: 'another-boot' }, [proc(100, 100, 5000)], new Map(), marked([100]))).toEqual([])
  })
})

describe('leaderIdentity', () => {
  it('records the start time of a running child, and a lower bound taken before the spawn for one already reaped', () => {
    const before = ticksSinceBoot()!
    expect(processStat(process.pid)!.startTicks).toBeLessThanOrEqual(before)
    const reaped = spawnSync('sh', ['-c', 'echo $$; grep -o ") . .*" /proc/$$/stat'], { encoding: 'utf8' }).stdout.split('\n')
    const [pid, started] = [Number(reaped[0]), Number(reaped[1].split(' ')[20])]
    expect(started).toBeGreaterThanOrEqual(before)
    expect(leaderIdentity(pid, before)).toEqual({ leaderPid: pid, leaderStartTicks: before, bootId: bootId() })
    expect(leaderIdentity(process.pid, before)?.leaderStartTicks).toBe(processStat(process.pid)!.startTicks)
  })
})
