/**
 * Killing a terminal's processes. The child node-pty starts is a session leader (forkpty calls
 * setsid), and an interactive shell puts each job in its own process group, so "the whole
 * process group" of a terminal is every process of that session: found through /proc, signalled
 * group by group and then one by one. A process that called setsid() itself has left the terminal.
 */
import { readdirSync, readFileSync } from 'node:fs'

/** Pids whose session id is `sid` (the terminal's child pid). Linux /proc. */
export function sessionMembers(sid: number): number[] {
  const members: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
    } catch {
      continue // exited meanwhile
    }
    // Fields after the parenthesised command: state ppid pgrp session …
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(fields[3]) === sid && fields[0] !== 'Z') members.push(Number(entry))
  }
  return members
}

function processGroup(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])
  } catch {
    return undefined
  }
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
    left = sessionMembers(sid)
  }
  return left
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
