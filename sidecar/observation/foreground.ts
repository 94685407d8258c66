/**
 * The foreground program of a terminal — one rule for its info (`foregroundCommand`) and for
 * observation's `foreground`: the leader of the PTY's foreground process group, named by its
 * argv[0] (tmux's `#{pane_current_command}`): `vim` while vim runs, the shell at its prompt. One
 * difference from tmux, on purpose: when the group's leader has ended while the group runs on
 * (`true | sleep 300`, `cat notes | agent`), tmux shows the pane's shell; here it is the group's
 * earliest-started live member (`sleep`), the program the terminal is actually waiting on.
 *
 * The live terminal records its name (persisted with its row, announced to followers) only when it
 * changes, so list and info keep answering from libSQL with the sidecar down. When to look: a
 * shell starts a command right after the Enter that asked for it, and a command ends by giving the
 * terminal back, usually printing a prompt — so shortly after input or output (at most once per
 * FOREGROUND_CHECK_DELAY_MS), plus every FOREGROUND_POLL_MS for programs that change without any
 * I/O. Each look is two /proc/<pid>/stat reads (small, formatted from the kernel's memory without
 * touching the process's own; read at once, as kills do) — plus the whole process table, only
 * while a group's leader is gone — and the leader's cmdline, which is copied out of its memory
 * and so read through the thread pool.
 */
import { open } from 'node:fs/promises'
import { FOREGROUND_CHECK_DELAY_MS, FOREGROUND_POLL_MS } from '../tuning.ts'
import { argvFrom, executableNameOf, processTable, readStat, terminalTree, type ProcStat } from './proc.ts'

/**
 * The foreground process of `shellPid`'s terminal: its foreground group's leader, else (the leader
 * ended) the group's earliest-started live member among `members`, else the shell. `members`: the
 * terminal's process tree (proc.ts `terminalTree`; read only when the leader is gone), so the
 * terminal's info and observation, which passes the tree it read, choose among the same processes.
 */
export function foregroundLeader(
  shellPid: number,
  members: () => Iterable<ProcStat> = () => terminalTree(processTable(), shellPid),
): ProcStat | undefined {
  const shell = readStat(shellPid)
  if (!shell || shell.state === 'Z') return undefined
  if (shell.tpgid <= 0 || shell.tpgid === shell.pid) return shell
  const leader = readStat(shell.tpgid)
  if (leader && leader.session === shell.session && leader.state !== 'Z') return leader
  let earliest: ProcStat | undefined
  for (const process of members()) {
    if (process.pgrp !== shell.tpgid || process.session !== shell.session || process.state === 'Z') continue
    if (
      !earliest ||
      process.startTicks < earliest.startTicks ||
      (process.startTicks === earliest.startTicks && process.pid < earliest.pid)
    ) {
      earliest = process
    }
  }
  return earliest ?? shell
}

const CMDLINE_START_BYTES = 4096

/** The foreground program's name, as tmux shows it. */
async function foregroundName(shellPid: number): Promise<string | undefined> {
  const leader = foregroundLeader(shellPid)
  if (!leader) return undefined
  return executableNameOf(argvFrom(await cmdlineStart(leader.pid)), leader.comm)
}

/** argv[0] is all a name needs: the command line's first bytes, not all of it. */
async function cmdlineStart(pid: number): Promise<Buffer | undefined> {
  const file = await open(`/proc/${pid}/cmdline`, 'r').catch(() => undefined)
  if (!file) return undefined
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(CMDLINE_START_BYTES), 0, CMDLINE_START_BYTES, 0)
    return buffer.subarray(0, bytesRead)
  } catch {
    return undefined
  } finally {
    await file.close().catch(() => {})
  }
}

export class ForegroundTracker {
  readonly #shellPid: number
  readonly #onChange: (name: string) => void
  readonly #poll: NodeJS.Timeout
  #last: string
  #scheduled: NodeJS.Timeout | undefined
  #checking = false
  #again = false
  #closed = false

  /** `initial`: the name known at spawn (the shell's), so the first look changes nothing. */
  constructor(shellPid: number, initial: string, onChange: (name: string) => void) {
    this.#shellPid = shellPid
    this.#last = initial
    this.#onChange = onChange
    this.#poll = setInterval(() => void this.#check(), FOREGROUND_POLL_MS)
    this.#poll.unref()
  }

  /** Something happened on the terminal: look again soon. */
  poke(): void {
    if (this.#closed || this.#scheduled) return
    this.#scheduled = setTimeout(() => {
      this.#scheduled = undefined
      void this.#check()
    }, FOREGROUND_CHECK_DELAY_MS)
    this.#scheduled.unref()
  }

  close(): void {
    this.#closed = true
    clearInterval(this.#poll)
    clearTimeout(this.#scheduled)
  }

  /** One look at a time; a poke during one makes another right after. */
  async #check(): Promise<void> {
    if (this.#checking) return void (this.#again = true)
    this.#checking = true
    try {
      do {
        this.#again = false
        const name = await foregroundName(this.#shellPid)
        if (this.#closed) return
        if (name !== undefined && name !== this.#last) {
          this.#last = name
          this.#onChange(name)
        }
      } while (this.#again && !this.#closed)
    } catch (error) {
      console.error("termkeep sidecar: reading a terminal's foreground program", error)
    } finally {
      this.#checking = false
    }
  }
}
