/**
 * Keepers started by tests (a sidecar starts one per data directory, detached: it outlives the
 * sidecar by design) are stopped by pid: `stopKeeper` when a test stops its stack, and, as a net
 * under a test that failed before its cleanup, every keeper of a data directory the test file
 * used, after the file (test/support/setup.ts; a vitest worker is not always let exit, so an
 * exit hook alone would not do). SIGTERM ends a keeper's terminals too.
 */
import type { ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { keeperPaths } from '../../local/keeper/paths.ts'
import { KEEPER_ENTRY } from '../../local/keeper/start.ts'
import { liveHolder } from '../../local/pid-lock.ts'
import { processStat } from '../../local/proc.ts'

const KEEPER_MODULE = new RegExp(`${KEEPER_ENTRY}(\\.ts|-[0-9a-f]+\\.mjs)$`)
const dataDirs = new Set<string>()
/** Sidecars (or serve processes) started on them: stopped first, or one would start a new keeper. */
const starters = new Set<ChildProcess>()

/** Remembers `dataDir` (and the process that will start its keeper): stopped after the test file
 * at the latest. */
export function watchKeeper(dataDir: string, starter?: ChildProcess): void {
  dataDirs.add(resolve(dataDir))
  if (starter) {
    starters.add(starter)
    starter.once('exit', () => starters.delete(starter))
  }
}

/** The pid of the keeper holding `dataDir`, if one runs. */
export function keeperPid(dataDir: string): number | undefined {
  return liveHolder(keeperPaths(dataDir).lock, KEEPER_ENTRY)
}

const running = (pid: number) => {
  const stat = processStat(pid)
  return stat !== undefined && !stat.zombie
}

/** Keepers of `dataDir` by their command line (`… keeper/main.ts <dataDir>`, or its bundle's
 * `… keeper/main-<hash>.mjs <dataDir>`: local/bundle.ts): found even when the
 * directory, with the keeper's lock file, was removed before the keeper was stopped. */
function keepersByCommandLine(dataDir: string): number[] {
  const dir = resolve(dataDir)
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0')
      if (args.at(-2) === dir && args.some((arg) => KEEPER_MODULE.test(arg))) pids.push(Number(entry))
    } catch {
      // gone
    }
  }
  return pids
}

/** SIGTERM to `dataDir`'s keeper (it ends its terminals), SIGKILL if it has not gone in time. */
export async function stopKeeper(dataDir: string, timeoutMs = 10_000): Promise<void> {
  const pids = new Set([keeperPid(dataDir), ...keepersByCommandLine(dataDir)].filter((pid) => pid !== undefined))
  for (const pid of pids) signal(pid, 'SIGTERM')
  const deadline = Date.now() + timeoutMs
  const left = () => [...pids].filter(running)
  while (left().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  for (const pid of left()) signal(pid, 'SIGKILL')
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // gone
  }
}

/** Stops the keeper of every data directory watched so far. */
export async function stopWatchedKeepers(): Promise<void> {
  await Promise.all(
    [...starters].map((child) => {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      return exited
    }),
  )
  const dirs = [...dataDirs]
  dataDirs.clear()
  await Promise.all(dirs.map((dir) => stopKeeper(dir)))
}

// Outside vitest (benchmarks, scripts): at the latest when this process exits.
process.once('exit', () => {
  for (const dir of dataDirs) {
    const pid = keeperPid(dir)
    if (pid !== undefined) signal(pid, 'SIGTERM')
  }
})
