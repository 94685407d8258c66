/**
 * Process facts from /proc that place a process in a terminal: its session, its process group,
 * its parent and its start time. The child node-pty starts is a session leader (forkpty calls
 * setsid), and an interactive shell puts each job in its own process group, so a terminal's
 * processes are the members of one session; which of them are provably the terminal's is
 * identity.ts's question, and killing them kill.ts's. A process that called setsid() itself has
 * left the terminal.
 */
import { processTable, readStat, type ProcStat } from '../observation/proc.ts'

/** What /proc/<pid>/stat says about a process that identifies it and its place in a session. */
export interface ProcessStat {
  pid: number
  ppid: number
  /** Process group and session ids (a session leader's pid is both). */
  pgrp: number
  session: number
  /** Field 22: when it started, in clock ticks since boot. With the pid and the boot, it names
   * one process: a reused pid has a later start time. */
  startTicks: number
  zombie: boolean
}

/** The facts a kill or a liveness check uses (parsed by observation/proc.ts, the one reader of
 * /proc/<pid>/stat). */
const factsOf = (stat: ProcStat): ProcessStat => ({
  pid: stat.pid,
  ppid: stat.ppid,
  pgrp: stat.pgrp,
  session: stat.session,
  startTicks: stat.startTicks,
  zombie: stat.state === 'Z',
})

/** One process's stat, or undefined once it is gone. Linux /proc. */
export function processStat(pid: number): ProcessStat | undefined {
  const stat = readStat(pid)
  return stat && factsOf(stat)
}

/** Every process there is now (one pass over /proc), zombies left out. */
export function allProcesses(): ProcessStat[] {
  return [...processTable().values()].filter((stat) => stat.state !== 'Z').map(factsOf)
}
