/**
 * Process facts from Linux /proc that the keeper and the sidecar both rely on: a process's stat
 * line (its parent, session, process group and start time), the whole process table, and this
 * boot's id. With the pid and the boot, a start time names one process: a reused pid has a later
 * one. Everything reads synchronously; a process that exited reads as undefined. Observation's
 * richer facts (argv, environment, descriptors) stay in sidecar/observation/proc.ts.
 */
import { readdirSync, readFileSync } from 'node:fs'

export interface ProcStat {
  pid: number
  /** The kernel's 15-character command name. */
  comm: string
  state: string
  ppid: number
  pgrp: number
  session: number
  /** The controlling terminal's device number (0: none). */
  ttyNr: number
  /** The foreground process group of that terminal (-1: none). */
  tpgid: number
  /** Clock ticks after boot: with the pid, the identity a reused pid never matches. */
  startTicks: number
}

/** /proc reports times in USER_HZ, which Linux fixes at 100 for user space on every common ABI. */
export const USER_HZ = 100

/** Pure: one /proc/<pid>/stat line. The command name may hold spaces and parentheses, so the
 * fields are counted from the last `)`. */
export function parseStat(pid: number, text: string): ProcStat | undefined {
  const open = text.indexOf('(')
  const close = text.lastIndexOf(')')
  if (open < 0 || close < open) return undefined
  const f = text.slice(close + 2).split(' ')
  // Fields 3… of proc(5): state ppid pgrp session tty_nr tpgid … starttime (22).
  const startTicks = Number(f[19])
  if (f.length < 20 || !Number.isSafeInteger(startTicks)) return undefined
  return {
    pid,
    comm: text.slice(open + 1, close),
    state: f[0],
    ppid: Number(f[1]),
    pgrp: Number(f[2]),
    session: Number(f[3]),
    ttyNr: Number(f[4]),
    tpgid: Number(f[5]),
    startTicks,
  }
}

export function readStat(pid: number): ProcStat | undefined {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'latin1'))
  } catch {
    return undefined // exited
  }
}

/** Every process this process can see, by pid. */
export function processTable(): Map<number, ProcStat> {
  const table = new Map<number, ProcStat>()
  for (const entry of readdirSync('/proc')) {
    const first = entry.charCodeAt(0)
    if (first < 48 || first > 57) continue // not a pid
    const stat = readStat(Number(entry))
    if (stat) table.set(stat.pid, stat)
  }
  return table
}

/** What /proc/<pid>/stat says about a process that identifies it and its place in a session. */
export interface ProcessStat {
  pid: number
  ppid: number
  /** Process group and session ids (a session leader's pid is both). */
  pgrp: number
  session: number
  /** Field 22: when it started, in clock ticks since boot. */
  startTicks: number
  zombie: boolean
}

const factsOf = (stat: ProcStat): ProcessStat => ({
  pid: stat.pid,
  ppid: stat.ppid,
  pgrp: stat.pgrp,
  session: stat.session,
  startTicks: stat.startTicks,
  zombie: stat.state === 'Z',
})

/** One process's stat, or undefined once it is gone. */
export function processStat(pid: number): ProcessStat | undefined {
  const stat = readStat(pid)
  return stat && factsOf(stat)
}

/** Every process there is now (one pass over /proc), zombies left out. */
export function allProcesses(): ProcessStat[] {
  return [...processTable().values()].filter((stat) => stat.state !== 'Z').map(factsOf)
}

/** Running with this start time (a zombie, or a pid reused by another program, is not). */
export function runsAs(pid: number, startTicks: number): boolean {
  const stat = processStat(pid)
  return stat !== undefined && !stat.zombie && stat.startTicks === startTicks
}

/** A process's environment entries (NAME=value), or none once it is gone or not ours to read. */
export function environ(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
  } catch {
    return []
  }
}

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

/** Clock ticks since boot now, rounded down (/proc/uptime counts the clock field 22 counts), or
 * undefined where /proc does not tell: every process started later has at least this start time. */
export function ticksSinceBoot(): number | undefined {
  try {
    const seconds = Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0])
    return Number.isFinite(seconds) ? Math.floor(seconds * USER_HZ) - 1 : undefined
  } catch {
    return undefined
  }
}
