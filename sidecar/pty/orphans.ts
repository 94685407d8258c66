/**
 * Processes a crashed sidecar left behind. A sidecar killed with -9 closes its PTYs, and the
 * kernel hangs up their sessions, but a program that ignores SIGHUP (`nohup`, `trap '' HUP`, and
 * the children that inherit that) keeps running, owned by nobody. The next sidecar kills them at
 * start, finding them by what its predecessor recorded per terminal (the terminals table), never
 * by a pid alone:
 *
 * - the boot must be the same (/proc/sys/kernel/random/boot_id): after a reboot nothing survived;
 * - a process is the terminal's if it is in the session of the terminal's shell (the shell's pid
 *   is its session id; Linux keeps a pid from reuse while any process still has it as a session
 *   id) and either the shell itself still runs with the recorded start time (field 22 of
 *   /proc/<pid>/stat), or, the shell gone, it started no earlier than the shell and carries the
 *   terminal's own TERMKEEP_SESSION_ID and TERMKEEP_TERMINAL_ID in its environment. A session id
 *   reused by an unrelated program matches neither.
 *
 * Linux only; elsewhere nothing is recorded and nothing is killed. Between the check and the
 * signal a pid could in principle be reused (a pidfd would close that window; Node has none), but
 * that needs the whole pid space to wrap around within microseconds.
 */
import { readFileSync } from 'node:fs'
import { allProcesses, processStat, type ProcessStat } from './process-tree.ts'

/** What a sidecar records about a terminal's shell when it starts it. */
export interface LeaderIdentity {
  leaderPid: number
  leaderStartTicks: number
  bootId: string
}

/** A terminal of an earlier generation, as its row recorded it. */
export interface RecordedTerminal extends LeaderIdentity {
  sessionId: string
  id: string
}

/** Rounds of look-and-kill at most (a loop that forks between a look and its kill is caught by
 * the next round), and the pause between two. */
const KILL_ROUNDS = 40
const ROUND_PAUSE_MS = 25

let boot: string | undefined | null = null

/** This boot's id, or undefined where /proc does not tell. */
export function bootId(): string | undefined {
  if (boot === null) {
    try {
      boot = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() || undefined
    } catch {
      boot = undefined
    }
  }
  return boot
}

/** The identity of a shell just started (it becomes a session leader), or undefined where /proc
 * does not tell or it is gone already. Its session is not checked: the child may not have called
 * setsid() yet, but its start time is its fork's, and the pid is our own unreaped child. */
export function leaderIdentity(pid: number): LeaderIdentity | undefined {
  const stat = processStat(pid)
  const id = bootId()
  if (!stat || id === undefined) return undefined
  return { leaderPid: pid, leaderStartTicks: stat.startTicks, bootId: id }
}

function environ(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
  } catch {
    return []
  }
}

/** The pids among `processes` proven to be `terminal`'s (see the file comment). */
export function leftoversOf(terminal: RecordedTerminal, processes: readonly ProcessStat[], readEnviron = environ): number[] {
  if (terminal.bootId !== bootId()) return []
  const members = processes.filter((p) => p.session === terminal.leaderPid)
  const leader = members.find((p) => p.pid === terminal.leaderPid)
  if (leader) return leader.startTicks === terminal.leaderStartTicks ? members.map((p) => p.pid) : []
  const marks = [`TERMKEEP_SESSION_ID=${terminal.sessionId}`, `TERMKEEP_TERMINAL_ID=${terminal.id}`]
  return members
    .filter((p) => p.startTicks >= terminal.leaderStartTicks)
    .filter((p) => {
      const env = readEnviron(p.pid)
      return marks.every((mark) => env.includes(mark))
    })
    .map((p) => p.pid)
}

export interface Sweep {
  /** Pids killed, per terminal (`session/terminal`). */
  killed: Map<string, number[]>
  /** Pids still running after the last round. */
  survivors: number[]
}

/** SIGKILLs every process proven to belong to one of `terminals`, round after round until none is
 * left (or KILL_ROUNDS passed). */
export async function killLeftovers(terminals: readonly RecordedTerminal[]): Promise<Sweep> {
  const killed = new Map<string, number[]>()
  if (terminals.length === 0) return { killed, survivors: [] }
  let left: number[] = []
  for (let round = 0; round < KILL_ROUNDS; round++) {
    const processes = allProcesses()
    left = []
    for (const terminal of terminals) {
      const pids = leftoversOf(terminal, processes)
      if (pids.length === 0) continue
      const key = `${terminal.sessionId}/${terminal.id}`
      const seen = killed.get(key) ?? []
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // ESRCH: gone meanwhile; EPERM: shows up as a survivor
        }
        if (!seen.includes(pid)) seen.push(pid)
      }
      killed.set(key, seen)
      left.push(...pids)
    }
    if (left.length === 0) break
    await new Promise((resolve) => setTimeout(resolve, ROUND_PAUSE_MS))
  }
  if (left.length === 0) return { killed, survivors: [] }
  // Every round found some: what a last look still finds survived SIGKILL (EPERM, or a fork bomb).
  const processes = allProcesses()
  return { killed, survivors: terminals.flatMap((t) => leftoversOf(t, processes)) }
}
