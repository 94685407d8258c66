/**
 * Killing a terminal's processes. The child node-pty starts is a session leader (forkpty calls
 * setsid), and an interactive shell puts each job in its own process group, so "the whole
 * process group" of a terminal is every process of that session: found through /proc, signalled
 * group by group and then one by one. A process that called setsid() itself has left the terminal.
 */
import { readdirSync, readFileSync } from 'node:fs'

/** What /proc/<pid>/stat says about a process that identifies it and its place in a session. */
export interface ProcessStat {
  pid: number
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
  return { pid, pgrp: Number(fields[2]), session: Number(fields[3]), startTicks: Number(fields[19]), zombie: fields[0] === 'Z' }
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

/** Pids whose session id is `sid` (the terminal's child pid). Linux /proc. */
export function sessionMembers(sid: number): number[] {
  return allProcesses()
    .filter((p) => p.session === sid)
    .map((p) => p.pid)
}

function processGroup(pid: number): number | undefined {
  return processStat(pid)?.pgrp
}

/** Sends `signal` to every process group of the session and to each member. Returns the members. */
export function signalSession(sid: number, signal: NodeJS.Signals): number[] {
  const members = sessionMembers(sid)
  const groups = new Set<number>([sid])
  for (const pid of members) {
    const group = processGroup(pid)
    if (group !== undefined) groups.add(group)
  }
  for (const group of groups) trySignal(-group, signal)
  for (const pid of members) trySignal(pid, signal)
  return members
}

function trySignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal)
  } catch {
    // ESRCH: already gone. EPERM surfaces as a survivor in the caller's check.
  }
}

/**
 * SIGHUP to the session, then SIGKILL to whatever is left after `graceMs`, then waits (bounded)
 * until no member remains. Resolves with the pids that survived (empty on success).
 */
export async function killSession(sid: number, graceMs: number, waitMs = 2_000): Promise<number[]> {
  if (signalSession(sid, 'SIGHUP').length === 0) return []
  const deadline = Date.now() + graceMs
  while (Date.now() < deadline && sessionMembers(sid).length > 0) await sleep(25)
  if (sessionMembers(sid).length === 0) return []
  signalSession(sid, 'SIGKILL')
  const killDeadline = Date.now() + waitMs
  let left = sessionMembers(sid)
  while (left.length > 0 && Date.now() < killDeadline) {
    await sleep(25)
    // A member that forked between the look and the kill has a child the first SIGKILL never
    // named (seen under load: a workflow agent's child outlived its closed terminal); each look
    // kills again whatever it finds, so only a process that survives SIGKILL itself is left.
    left = signalSession(sid, 'SIGKILL')
  }
  return left
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
