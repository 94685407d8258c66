/**
 * The sidecar's own measure of a script process (Linux /proc): CPU time and resident memory of
 * the process and its descendants (with namespaces, the sidecar's child is `unshare`, whose child
 * runs the script). This is the backstop behind the limits the engine applies inside the process
 * (program.ts): code that escaped the engine could switch those off, not these.
 */
import { readFileSync } from 'node:fs'
import { USER_HZ } from '../observation/proc.ts'
import type { RunLimit } from '../../schema/wire/workflows.ts'
import { WORKFLOW_LIMIT_CHECK_MS } from './tuning.ts'

export interface Usage {
  cpuMs: number
  rssBytes: number
}

function own(pid: number): (Usage & { children: number[] }) | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // Fields after the command name (which may hold spaces): state is 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12])
    const rss = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number)
    return { cpuMs: (ticks * 1000) / USER_HZ, rssBytes: rss ? Number(rss[1]) * 1024 : 0, children }
  } catch {
    return undefined // gone
  }
}

/** The process's and its descendants' usage summed, or undefined once the process is gone. */
export function treeUsage(pid: number): Usage | undefined {
  const top = own(pid)
  if (!top) return undefined
  const total = { cpuMs: top.cpuMs, rssBytes: top.rssBytes }
  const pending = [...top.children]
  while (pending.length > 0) {
    const next = own(pending.pop()!)
    if (!next) continue
    total.cpuMs += next.cpuMs
    total.rssBytes += next.rssBytes
    pending.push(...next.children)
  }
  return total
}

/**
 * Checks a process every WORKFLOW_LIMIT_CHECK_MS; calls `exceeded` once when it passes a bound.
 * `hostMs` is time spent on the process's behalf outside it (the sidecar serving its requests),
 * counted with its CPU time.
 */
export function watchUsage(
  pid: number,
  bounds: { cpuMs: number; rssBytes: number },
  exceeded: (limit: Exclude<RunLimit, 'wall-time'>, usage: Usage) => void,
  everyMs = WORKFLOW_LIMIT_CHECK_MS,
  hostMs: () => number = () => 0,
): () => void {
  const timer = setInterval(() => {
    const usage = treeUsage(pid)
    if (!usage) return clearInterval(timer)
    const over = usage.cpuMs + hostMs() > bounds.cpuMs ? 'cpu-time' : usage.rssBytes > bounds.rssBytes ? 'memory' : undefined
    if (!over) return
    clearInterval(timer)
    exceeded(over, usage)
  }, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}
