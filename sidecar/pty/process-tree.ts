/**
 * Process facts from /proc that place a process in a terminal: its session, its process group,
 * its parent and its start time. The child node-pty starts is a session leader (forkpty calls
 * setsid), and an interactive shell puts each job in its own process group, so a terminal's
 * processes are the members of one session; which of them are provably the terminal's is
 * identity.ts's question, and killing them kill.ts's. A process that called setsid() itself has
 * left the terminal.
 */
import { readdirSync, readFileSync } from 'node:fs'

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

/** One process's stat, or undefined once it is gone. Linux /proc. */
export function processStat(pid: number): ProcessStat | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return undefined
  }
  // The command (field 2) is parenthesised and may hold anything: fields 3… follow its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return {
    pid,
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
    startTicks: Number(fields[19]),
    zombie: fields[0] === 'Z',
  }
}

/** Every process there is now (one pass over /proc), zombies left out. */
export function allProcesses(): ProcessStat[] {
  const processes: ProcessStat[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = processStat(Number(entry)) // undefined: exited meanwhile
    if (stat && !stat.zombie) processes.push(stat)
  }
  return processes
}
