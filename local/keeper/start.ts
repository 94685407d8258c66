/**
 * Reaching the data directory's keeper, starting one when none runs: what a sidecar does at its
 * start (and after its keeper ended). The keeper is started detached — a session of its own, its
 * output appended to keeper.log, no descriptor of its starter — so that it outlives whoever
 * started it and holds nobody's pipes (a test run or a CI job that started it still ends). Two
 * starters racing start at most one keeper each; the keeper's own lock lets one of them run.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BUNDLE_NODE_FLAGS, bundled } from '../bundle.ts'
import { liveHolder } from '../pid-lock.ts'
import { KeeperClient, KeeperRefused, KeeperUnreachable } from './client.ts'
import { keeperPaths, socketPathProblem } from './paths.ts'
import type { Role } from './protocol.ts'

/** What the keeper's command line names (node … keeper/main.ts <data dir>). */
export const KEEPER_ENTRY = 'keeper/main'
/** The keeper's entry: a path to start a process with, not an import (nothing of the keeper's code
 * is loaded here; the layering keeps the keeper and the sidecar peers). */
const ENTRY_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'keeper', 'main.ts')

/** How long a starter waits for the keeper to answer (tsx compiling it on a loaded machine). */
export const KEEPER_START_TIMEOUT_MS = 30_000
/** The pause between two tries while the keeper is starting. */
const CONNECT_RETRY_MS = 25
/** One handshake's deadline. */
const HANDSHAKE_TIMEOUT_MS = 5_000
/** The log is moved aside at a start once it is bigger than this (one line per event). */
const LOG_MAX_BYTES = 1024 * 1024
/** Flags of the keeper process: a small young generation (it allocates one buffer per flush). */
const KEEPER_NODE_FLAGS = ['--max-semi-space-size=1']
/** The only variables the keeper itself needs: a terminal's environment comes with its spawn.
 * (TERMKEEP_HOP_TRACE: the bench's hop trace, common/hop-trace.ts; TERMKEEP_KEEPER_IDLE_EXIT_MS: its idle exit.) */
const KEEPER_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TERMKEEP_HOP_TRACE', 'TERMKEEP_KEEPER_IDLE_EXIT_MS']
/**
 * glibc's malloc settings for the keeper (read before its first allocation; the sidecar's are the
 * same, for the same reasons): two arenas instead of one per allocating thread (main, PTY thread,
 * libuv's and V8's helpers), and a fixed 128 KiB mmap threshold, so a flood's flushes (up to 1 MiB
 * each, one buffer per flush) are mapped and given back rather than carved from an arena whose
 * holes the keeper keeps for the rest of its life.
 */
const KEEPER_MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' }

/** The keeper could not be started or reached; the message is one line for the operator. */
export class KeeperStartError extends Error {
  override name = 'KeeperStartError'
}

export interface ReachOptions {
  role: Role
  software: string
  /** Start a keeper when none answers (the sidecar); otherwise a missing keeper throws. */
  start: boolean
  timeoutMs?: number
}

/** The connected keeper of `dataDir`: KeeperRefused (an impostor past the deadline, an incompatible
 * keeper), KeeperUnreachable (none runs, and `start` is off) or KeeperStartError otherwise. */
export async function reachKeeper(dataDir: string, options: ReachOptions): Promise<KeeperClient> {
  const paths = keeperPaths(dataDir)
  const tooLong = socketPathProblem(paths)
  if (tooLong) throw new KeeperStartError(tooLong)
  const deadline = Date.now() + (options.timeoutMs ?? KEEPER_START_TIMEOUT_MS)
  let started: ChildProcess | undefined
  let exited: number | null | undefined
  for (;;) {
    try {
      return await KeeperClient.connect(paths, { role: options.role, software: options.software, timeoutMs: HANDSHAKE_TIMEOUT_MS })
    } catch (error) {
      if (error instanceof KeeperRefused && error.why === 'incompatible') throw error
      const unreachable = error instanceof KeeperUnreachable
      if (!unreachable && !(error instanceof KeeperRefused)) throw error
      if (unreachable && !options.start) throw error
      // An impostor at the path: the real keeper takes its path back within seconds; wait for it.
      if (Date.now() > deadline) {
        if (error instanceof KeeperRefused) throw error
        const seconds = Math.round((options.timeoutMs ?? KEEPER_START_TIMEOUT_MS) / 1000)
        throw new KeeperStartError(`the keeper did not answer within ${seconds} s (${(error as Error).message}); see ${paths.log}`)
      }
      if (unreachable && liveHolder(paths.lock, KEEPER_ENTRY) === undefined) {
        if (started === undefined || exited !== undefined) {
          if (exited !== undefined && exited !== 0) throw new KeeperStartError(`the keeper exited at its start: ${lastLine(paths.log)}`)
          started = startKeeper(dataDir, await keeperLaunch())
          exited = undefined
          started.once('exit', (code) => (exited = code))
        }
      }
      await new Promise((resolve) => setTimeout(resolve, CONNECT_RETRY_MS))
    }
  }
}

/** The keeper's module and the Node options it needs: its bundle (local/bundle.ts), or its source
 * under tsx where the bundle cannot be built or written. */
async function keeperLaunch(): Promise<string[]> {
  try {
    return [...BUNDLE_NODE_FLAGS, await bundled(ENTRY_PATH)]
  } catch {
    return ['--import', tsxLoader(), ENTRY_PATH]
  }
}

/** Starts a keeper for `dataDir` (detached; see the file comment). */
function startKeeper(dataDir: string, launch: string[]): ChildProcess {
  const paths = keeperPaths(dataDir)
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 })
  rotate(paths.log)
  const log = openSync(paths.log, 'a', 0o600)
  try {
    const env: Record<string, string> = { ...KEEPER_MALLOC_ENV }
    for (const name of KEEPER_ENV) if (process.env[name] !== undefined) env[name] = process.env[name]!
    const child = spawn(process.execPath, [...KEEPER_NODE_FLAGS, ...launch, resolve(dataDir)], {
      detached: true,
      stdio: ['ignore', log, log],
      cwd: paths.dir,
      env,
    })
    child.unref()
    return child
  } finally {
    closeSync(log)
  }
}

/** tsx's loader as an absolute URL: `--import tsx` would resolve from the keeper's working
 * directory (its own), where no node_modules is. */
function tsxLoader(): string {
  return import.meta.resolve('tsx')
}

function rotate(log: string): void {
  try {
    if (statSync(log).size > LOG_MAX_BYTES) renameSync(log, `${log}.1`)
  } catch {
    // no log yet
  }
}

/** The last line of the keeper's log (why it stopped at its start). */
export function lastLine(log: string): string {
  try {
    const lines = readFileSync(log, 'utf8').trimEnd().split('\n')
    return lines.at(-1)?.replace(/^\S+ /, '') ?? '(no log)'
  } catch {
    return '(no log)'
  }
}
