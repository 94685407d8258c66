/**
 * Which processes are a terminal's, proven rather than assumed from a pid. Every kill of a
 * terminal's processes asks this first: a close, a shutdown, and the sweep of what a crashed
 * keeper left behind (orphans.ts). A pid, a session id or a process group id alone proves
 * nothing once the terminal's shell has exited: its pid can be reused by an unrelated program
 * that calls setsid() or setpgrp() and so owns that session or group id.
 *
 * What the keeper records when it starts a terminal's shell (beside the terminal's journal, and
 * the sidecar in the terminals table): the shell's pid (the id of the session every process of the terminal is in), its start time
 * (field 22 of /proc/<pid>/stat, clock ticks since boot) and the boot
 * (/proc/sys/kernel/random/boot_id). A process is then the terminal's if, on the same boot, it is
 * in the session of the shell's pid and
 *
 * - the shell itself still runs with the recorded start time (the whole session is its), or
 * - it started no earlier than the shell and carries the terminal's own TERMKEEP_SESSION_ID and
 *   TERMKEEP_TERMINAL_ID in its environment, or
 * - it was proven at an earlier look of the same kill (same pid and start time: one process), or
 *   its parent is a proven process (a child forked meanwhile, or one that cleared its
 *   environment).
 *
 * A session id reused by an unrelated program matches none of these. Linux only; elsewhere
 * nothing is recorded and nothing is killed. Between the look and the signal a pid could in
 * principle be reused (a pidfd would close that window; Node has none), but that needs the whole
 * pid space to wrap around within microseconds.
 */
import { bootId, environ, processStat, type ProcessStat } from '../local/proc.ts'

export { bootId, environ, ticksSinceBoot } from '../local/proc.ts'

/** What the keeper records about a terminal's shell when it starts it. */
export interface LeaderIdentity {
  leaderPid: number
  leaderStartTicks: number
  bootId: string
}

/** A terminal's processes, as recorded when its shell started: the leader and the marks. */
export interface TerminalIdentity extends LeaderIdentity {
  sessionId: string
  id: string
}

/** Processes proven at an earlier look: pid → start ticks. */
export type Proven = Map<number, number>

/**
 * The identity of a shell just started (it becomes a session leader), or undefined where /proc
 * does not tell. Its session is not checked: the child may not have called setsid() yet, but its
 * start time is its fork's, and the pid is our own child. A child that already exited and was
 * reaped has no stat left: `startedAfter` (ticksSinceBoot() before the spawn) stands in for its
 * start time, so what it left behind is still found by the marks (started no earlier than that).
 */
export function leaderIdentity(pid: number, startedAfter?: number): LeaderIdentity | undefined {
  const id = bootId()
  const startTicks = processStat(pid)?.startTicks ?? startedAfter
  if (id === undefined || startTicks === undefined) return undefined
  return { leaderPid: pid, leaderStartTicks: startTicks, bootId: id }
}

/**
 * The pids among `processes` proven to be `terminal`'s (see the file comment). `proven` carries
 * what earlier looks of one kill proved, and learns what this look proves.
 */
export function membersOf(
  terminal: TerminalIdentity,
  processes: readonly ProcessStat[],
  proven: Proven = new Map(),
  readEnviron = environ,
): number[] {
  if (terminal.bootId !== bootId()) return []
  const session = processes.filter((p) => p.session === terminal.leaderPid)
  const leader = processes.find((p) => p.pid === terminal.leaderPid)
  const stranger = leader !== undefined && leader.startTicks !== terminal.leaderStartTicks
  if (stranger && leader.session === leader.pid) return [] // a reused pid, leading a session of its own
  const ours = new Set<number>()
  if (leader?.startTicks === terminal.leaderStartTicks) {
    // The shell itself (its pid and start time), also before its setsid() (a close right after
    // the spawn): it is still in the sidecar's session then, with nothing of its own yet.
    ours.add(leader.pid)
    for (const p of session) ours.add(p.pid)
  } else {
    const marks = [`TERMKEEP_SESSION_ID=${terminal.sessionId}`, `TERMKEEP_TERMINAL_ID=${terminal.id}`]
    for (const p of session) {
      if (proven.get(p.pid) === p.startTicks) ours.add(p.pid)
      else if (p.startTicks >= terminal.leaderStartTicks && hasAll(readEnviron(p.pid), marks)) ours.add(p.pid)
    }
    // Children of proven processes, however deep (a parent starts no later than its child).
    for (let grew = true; grew; ) {
      grew = false
      for (const p of session) {
        if (ours.has(p.pid) || !ours.has(p.ppid)) continue
        ours.add(p.pid)
        grew = true
      }
    }
  }
  const members = processes.filter((p) => ours.has(p.pid))
  for (const p of members) proven.set(p.pid, p.startTicks)
  return members.map((p) => p.pid)
}

/** Does `environment` (one read of /proc/<pid>/environ) carry every one of `marks`? */
const hasAll = (environment: readonly string[], marks: readonly string[]) => marks.every((mark) => environment.includes(mark))
