/**
 * How long a process's main thread waited for a CPU (Linux /proc/<pid>/task/<pid>/schedstat, the
 * run-queue wait in nanoseconds), so a latency test can tell time the code blocked from time the
 * box was too busy to run it. 0 where the kernel does not report it.
 */
import { readFileSync } from 'node:fs'

export function runQueueWaitMs(pid: number): number {
  try {
    const [, waited] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')
    return Number(waited) / 1e6
  } catch {
    return 0
  }
}
