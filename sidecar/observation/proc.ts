/**
 * Process facts from Linux /proc: the process table, a terminal's process tree, and one
 * process's argv, environment, working directory and open descriptors.
 *
 * Everything here reads synchronously, and runs in observation's own thread (proc-worker.ts), not
 * on the sidecar's event loop: 200 processes' cmdline and cwd take ~1 ms read one after the other
 * but ~20 ms as 1,000 thread-pool round trips, and the kernel copies cmdline and environ out of
 * the target's memory under its memory-map lock, which can make a read wait — which may stall
 * that thread, never the terminals.
 */
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, statSync } from 'node:fs'
import { basename } from 'node:path'
import { objectOf, type ObjectIdentity } from './handles.ts'
import { type ProcStat, USER_HZ } from '../../local/proc.ts'
import { OBSERVE_MAX_ARGUMENT_CHARS, OBSERVE_MAX_ARGUMENTS } from '../../schema/limits.ts'
import { OBSERVE_MAX_DESCRIPTORS_PER_PROCESS, OBSERVE_MAX_PROC_TEXT_BYTES } from '../tuning.ts'

export { parseStat, processTable, readStat, USER_HZ, type ProcStat } from '../../local/proc.ts'

/**
 * Pure: the terminal's process tree — the shell, then its descendants depth first (children in
 * pid order), then members of the shell's session that left the tree (an orphaned background job
 * whose parent exited). Parent links are followed from the shell only, so nothing outside can
 * join by naming a parent.
 */
export function terminalTree(table: ReadonlyMap<number, ProcStat>, shellPid: number): ProcStat[] {
  const shell = table.get(shellPid)
  if (!shell) return []
  const children = new Map<number, ProcStat[]>()
  for (const process of table.values()) {
    if (process.pid === shellPid) continue
    const siblings = children.get(process.ppid)
    if (siblings) siblings.push(process)
    else children.set(process.ppid, [process])
  }
  const tree: ProcStat[] = []
  const seen = new Set<number>()
  const stack = [shell]
  while (stack.length > 0) {
    const process = stack.pop()!
    if (seen.has(process.pid)) continue
    seen.add(process.pid)
    tree.push(process)
    const below = children.get(process.pid)
    if (below) stack.push(...[...below].sort((a, b) => b.pid - a.pid))
  }
  const strays = [...table.values()].filter((p) => p.session === shellPid && !seen.has(p.pid)).sort((a, b) => a.pid - b.pid)
  return [...tree, ...strays]
}

// ── Per process ──────────────────────────────────────────────────────────────────────────

/** Up to `max` bytes of a /proc text file, or undefined when it cannot be read. */
function readBounded(path: string, max = OBSERVE_MAX_PROC_TEXT_BYTES): Buffer | undefined {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch {
    return undefined
  }
  try {
    const parts: Buffer[] = []
    let total = 0
    while (total < max) {
      const buffer = Buffer.allocUnsafe(Math.min(64 * 1024, max - total))
      const read = readSync(fd, buffer, 0, buffer.length, null)
      if (read === 0) break
      parts.push(buffer.subarray(0, read))
      total += read
    }
    return Buffer.concat(parts, total)
  } catch {
    return undefined // exited while read, or not ours to read
  } finally {
    closeSync(fd)
  }
}

/** The process's argv (bounded; a kernel thread or zombie has none). */
export function argvOf(pid: number): string[] | undefined {
  return argvFrom(readBounded(`/proc/${pid}/cmdline`))
}

/** Pure: argv from /proc/<pid>/cmdline's bytes. */
export function argvFrom(raw: Buffer | undefined): string[] | undefined {
  if (!raw || raw.length === 0) return undefined
  const text = raw.toString('utf8')
  const parts = (text.endsWith('\0') ? text.slice(0, -1) : text).split('\0')
  return parts.slice(0, OBSERVE_MAX_ARGUMENTS + 1).map((a) => a.slice(0, OBSERVE_MAX_ARGUMENT_CHARS))
}

/** The environment the process started with (later setenv calls are not visible to anyone). */
export function environOf(pid: number): Record<string, string> | undefined {
  // One byte past the bound tells whether the bound cut it.
  const raw = readBounded(`/proc/${pid}/environ`, OBSERVE_MAX_PROC_TEXT_BYTES + 1)
  if (!raw) return undefined
  const cut = raw.length > OBSERVE_MAX_PROC_TEXT_BYTES
  return environFrom(cut ? raw.subarray(0, OBSERVE_MAX_PROC_TEXT_BYTES) : raw, cut)
}

/** Pure: the variables of /proc/<pid>/environ's bytes (the first of a repeated name wins). When
 * the read was `cut` at its bound, the last entry is partial — a HOME cut short can name another
 * existing directory — so it is dropped: a name only past the bound is unknown, never a prefix. */
export function environFrom(raw: Buffer, cut: boolean): Record<string, string> {
  let text = raw.toString('utf8')
  if (cut) text = text.slice(0, Math.max(0, text.lastIndexOf('\0')))
  const values: Record<string, string> = {}
  for (const entry of text.split('\0')) {
    const equals = entry.indexOf('=')
    const name = entry.slice(0, equals)
    if (equals > 0 && !Object.hasOwn(values, name)) values[name] = entry.slice(equals + 1)
  }
  return values
}

export function cwdOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`)
  } catch {
    return undefined
  }
}

/** Pure: the program's name as tmux shows it: argv[0]'s last segment (a login shell's leading
 * `-` dropped), else the kernel's command name. A program that rewrote its whole command line
 * into argv[0] (setproctitle: one argument holding spaces) is named by its first word. */
export function executableNameOf(argv: readonly string[] | undefined, comm: string): string {
  let first = argv?.[0]?.replace(/^-/, '') ?? ''
  if (argv?.length === 1) first = first.split(' ')[0]
  const name = basename(first)
  return name.length > 0 ? name.slice(0, OBSERVE_MAX_ARGUMENT_CHARS) : comm
}

let bootMs: number | undefined

/** Pure given the boot time: a start in clock ticks after boot as ISO 8601. */
export function startedAtOf(startTicks: number): string | undefined {
  bootMs ??= bootTime()
  return bootMs === undefined ? undefined : new Date(bootMs + (startTicks * 1000) / USER_HZ).toISOString()
}

function bootTime(): number | undefined {
  try {
    const match = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'latin1'))
    return match ? Number(match[1]) * 1000 : undefined
  } catch {
    return undefined
  }
}

// ── Terminals ────────────────────────────────────────────────────────────────────────────

/** Pure: the device number (as /proc's tty_nr encodes it) of /dev/pts/<index>. Unix98 PTY slaves
 * have majors 136–143, 256 minors each. */
export function ptsDeviceNumber(index: number): number {
  const major = 136 + (index >> 8)
  const minor = index & 0xff
  return minor | (major << 8)
}

/** Pure: `major:minor` of a tty_nr. */
export function deviceIdOf(ttyNr: number): string {
  const major = (ttyNr >> 8) & 0xfff
  const minor = (ttyNr & 0xff) | ((ttyNr >> 12) & 0xfff00)
  return `${major}:${minor}`
}

// ── Descriptors ──────────────────────────────────────────────────────────────────────────

export interface Descriptor {
  /** The kernel's path of the open file (never a symlink). */
  path: string
  access: 'readable' | 'writable' | 'read-write'
  /** What the descriptor refers to (stat through /proc/<pid>/fd/N). */
  identity: ObjectIdentity
}

const ACCESS = ['readable', 'writable', 'read-write'] as const

/** The regular files `pid` holds open (sockets, pipes, devices and deleted files left out). */
export function openRegularFiles(pid: number): Descriptor[] {
  let fds: string[]
  try {
    fds = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return []
  }
  const found: Descriptor[] = []
  for (const fd of fds.slice(0, OBSERVE_MAX_DESCRIPTORS_PER_PROCESS)) {
    let path: string
    try {
      path = readlinkSync(`/proc/${pid}/fd/${fd}`)
    } catch {
      continue
    }
    if (!path.startsWith('/') || path.endsWith(' (deleted)')) continue
    const info = readBounded(`/proc/${pid}/fdinfo/${fd}`, 4096)
    let stats
    try {
      stats = statSync(`/proc/${pid}/fd/${fd}`, { bigint: true })
    } catch {
      continue // closed meanwhile, or not ours to look at
    }
    if (!info || !stats.isFile()) continue
    const flags = /^flags:\s*([0-7]+)$/m.exec(info.toString('latin1'))?.[1]
    const access = flags === undefined ? undefined : ACCESS[Number.parseInt(flags, 8) & 3]
    if (access) found.push({ path, access, identity: objectOf(stats) })
  }
  return found
}
