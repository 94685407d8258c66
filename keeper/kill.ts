/**
 * Killing terminals' processes: the one mechanism behind a close, a shutdown and the sweep after
 * a crash. Every look at /proc first proves which processes are a terminal's (identity.ts) and
 * signals only those, one by one. Nothing is ever signalled by a recorded pid, session id or
 * group id alone (no kill(-pgid)): once the shell is gone its pid may name a stranger that called
 * setsid() or setpgrp(). A child forked between a look and its signal is proven at the next look
 * (its parent is proven, or it carries the marks) and signalled then.
 */
import { allProcesses } from '../local/proc.ts'
import { membersOf, type Proven, type TerminalIdentity } from './identity.ts'

/** The pause between two looks at /proc while waiting for processes to go. */
const LOOK_PAUSE_MS = 25

export interface Kill<T extends TerminalIdentity> {
  /** The pids signalled, per terminal that had any. */
  killed: Map<T, number[]>
  /** Pids still proven the terminals' after the last look. */
  survivors: number[]
}

/**
 * SIGHUP to every proven process of `terminals`, then SIGKILL to whatever is left after `graceMs`
 * (again at each look: a member that forked between a look and its kill has a child the first
 * SIGKILL never named), then waits (bounded by `waitMs`) until none is left.
 */
export async function killTerminals<T extends TerminalIdentity>(
  terminals: readonly T[],
  graceMs: number,
  waitMs: number,
): Promise<Kill<T>> {
  const killed = new Map<T, number[]>()
  if (terminals.length === 0) return { killed, survivors: [] }
  const proven = new Map(terminals.map((t) => [t, new Map() as Proven]))
  const look = (signal?: NodeJS.Signals): number[] => {
    const processes = allProcesses()
    const left: number[] = []
    for (const terminal of terminals) {
      const members = membersOf(terminal, processes, proven.get(terminal))
      if (members.length === 0) continue
      left.push(...members)
      if (!signal) continue
      for (const pid of members) trySignal(pid, signal)
      const seen = killed.get(terminal) ?? []
      killed.set(terminal, [...seen, ...members.filter((pid) => !seen.includes(pid))])
    }
    return left
  }
  if (look('SIGHUP').length === 0) return { killed, survivors: [] }
  const graceEnd = Date.now() + graceMs
  while (Date.now() < graceEnd && look().length > 0) await sleep(LOOK_PAUSE_MS)
  const killEnd = Date.now() + waitMs
  let left = look('SIGKILL')
  while (left.length > 0 && Date.now() < killEnd) {
    await sleep(LOOK_PAUSE_MS)
    left = look('SIGKILL')
  }
  return { killed, survivors: left }
}

/** One terminal's processes (see killTerminals). Resolves with the pids that survived. */
export async function killSession(terminal: TerminalIdentity, graceMs: number, waitMs = 2_000): Promise<number[]> {
  return (await killTerminals([terminal], graceMs, waitMs)).survivors
}

function trySignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal)
  } catch {
    // ESRCH: already gone. EPERM surfaces as a survivor in the caller's check.
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
