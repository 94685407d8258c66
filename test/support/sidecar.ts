/**
 * Starts the real sidecar process (`sidecar/main.ts`, as `termkeep serve` does: sidecar/launch.ts) on a free loopback port and stops
 * it by pid. Tests use this, never an in-process fake. The sidecar starts its data directory's
 * keeper (which holds the terminals and outlives the sidecar by design): `stop()` stops that
 * keeper too, by pid, unless asked to leave the terminals running.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sidecarLaunch } from '../../sidecar/launch.ts'
import { SIDECAR_NODE_FLAGS, sidecarEnv } from '../../sidecar/node-flags.ts'
import { keeperPid, stopKeeper, watchKeeper } from './keepers.ts'
import { freePort } from './ports.ts'

export interface SidecarOptions {
  databaseUrl?: string
  dataDir?: string
  secret?: string
  port?: number
  env?: Record<string, string>
  /** Extra Node options for the sidecar process (e.g. a fault-injection preload). */
  nodeArgs?: string[]
  /** Its working directory (default: the test runner's). */
  cwd?: string
  /** Start it as configured by default: no TERMKEEP_DATA_DIR or DATABASE_URL, so it uses
   * `./data` and `file:./data/termkeep.db` relative to `cwd` (which `dataDir` then names). */
  defaultLocations?: boolean
}

export interface RunningSidecar {
  url: string
  secret: string
  dataDir: string
  databaseUrl: string
  pid: number
  generation: number
  /** The host it runs as (its data directory's host.id). */
  hostId: string
  child: ChildProcess
  /** Everything it printed so far (stdout and stderr). */
  output(): string
  /** SIGTERM, then SIGKILL after a grace period; then the keeper (and its terminals) unless
   * `terminals: 'keep'`. */
  stop(options?: { terminals?: 'end' | 'keep' }): Promise<void>
  /** SIGKILL: a crash, for restart tests (the keeper and its terminals go on). */
  kill(): Promise<void>
  /** The pid of the data directory's keeper, if one runs. */
  keeperPid(): number | undefined
}

export async function startSidecar(options: SidecarOptions = {}): Promise<RunningSidecar> {
  const dataDir = options.defaultLocations
    ? join(options.cwd ?? process.cwd(), 'data')
    : (options.dataDir ?? mkdtempSync(join(tmpdir(), 'termkeep-sidecar-')))
  const databaseUrl = options.databaseUrl ?? `file:${join(dataDir, 'termkeep.db')}`
  const secret = options.secret ?? `test-secret-${Math.random().toString(36).slice(2)}-xxxxxxxx`
  const port = options.port ?? (await freePort())
  const url = `http://127.0.0.1:${port}`
  // The shells it starts read their rc files from an empty home, not the machine's: a dotfile that
  // waits (here pyenv's `init`, stuck for 60 s behind a lock left by a shell killed mid-start)
  // would stall every later test that types into a shell.
  const home = options.defaultLocations ? join(dataDir, '..', 'home') : join(dataDir, 'home')
  mkdirSync(home, { recursive: true })
  const locations = options.defaultLocations ? {} : { TERMKEEP_DATA_DIR: dataDir, DATABASE_URL: databaseUrl }
  const inherited = { ...process.env }
  if (options.defaultLocations) {
    delete inherited.TERMKEEP_DATA_DIR
    delete inherited.DATABASE_URL
  }
  const launch = await sidecarLaunch()
  const child = fork(launch.entry, [], {
    execArgv: [
      ...launch.execArgv,
      ...SIDECAR_NODE_FLAGS,
      ...(process.env.TERMKEEP_SIDECAR_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      ...(options.nodeArgs ?? []),
    ],
    cwd: options.cwd,
    env: sidecarEnv({
      ...inherited,
      HOME: home,
      // Workflow runs start also on a kernel without user namespaces (then without them, as
      // health says); a test of the refusal asks for `required`.
      TERMKEEP_WORKFLOW_NAMESPACES: 'optional',
      ...options.env,
      ...locations,
      SIDECAR_URL: url,
      SIDECAR_SECRET: secret,
    }),
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  })
  watchKeeper(dataDir, child)
  let output = ''
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()))
  const { generation, hostId } = await new Promise<{ generation: number; hostId: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sidecar did not start:\n${output}`)), 30_000)
    child.once('message', (m: { generation: number; hostId: string }) => {
      clearTimeout(timer)
      resolve(m)
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`sidecar exited with ${code} during start:\n${output}`))
    })
  })
  const exited = new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('exit', () => r())))
  const signal = async (sig: NodeJS.Signals, graceMs: number) => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill(sig)
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    await exited
    clearTimeout(timer)
  }
  return {
    url,
    secret,
    dataDir,
    databaseUrl,
    pid: child.pid!,
    generation,
    hostId,
    child,
    output: () => output,
    stop: async (options = {}) => {
      await signal('SIGTERM', 5000)
      if (options.terminals !== 'keep') await stopKeeper(dataDir)
    },
    kill: () => signal('SIGKILL', 0),
    keeperPid: () => keeperPid(dataDir),
  }
}
