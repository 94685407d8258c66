/**
 * Starts the real sidecar process (`sidecar/main.ts` under tsx) on a free loopback port and stops
 * it by pid. Tests use this, never an in-process fake. The sidecar starts its data directory's
 * keeper (which holds the terminals and outlives the sidecar by design): `stop()` stops that
 * keeper too, by pid, unless asked to leave the terminals running.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SIDECAR_NODE_FLAGS } from '../../sidecar/node-flags.ts'
import { keeperPid, stopKeeper, watchKeeper } from './keepers.ts'
import { freePort } from './ports.ts'

const ENTRY = new URL('../../sidecar/main.ts', import.meta.url).pathname

export interface SidecarOptions {
  databaseUrl?: string
  dataDir?: string
  secret?: string
  port?: number
  env?: Record<string, string>
  /** Extra Node options for the sidecar process (e.g. a fault-injection preload). */
  nodeArgs?: string[]
}

export interface RunningSidecar {
  url: string
  secret: string
  dataDir: string
  databaseUrl: string
  pid: number
  generation: number
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
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'termkeep-sidecar-'))
  const databaseUrl = options.databaseUrl ?? `file:${join(dataDir, 'termkeep.db')}`
  const secret = options.secret ?? `test-secret-${Math.random().toString(36).slice(2)}-xxxxxxxx`
  const port = options.port ?? (await freePort())
  const url = `http://127.0.0.1:${port}`
  // The shells it starts read their rc files from an empty home, not the machine's: a dotfile that
  // waits (here pyenv's `init`, stuck for 60 s behind a lock left by a shell killed mid-start)
  // would stall every later test that types into a shell.
  const home = join(dataDir, 'home')
  mkdirSync(home, { recursive: true })
  const child = fork(ENTRY, [], {
    execArgv: [
      '--import',
      'tsx',
      ...SIDECAR_NODE_FLAGS,
      ...(process.env.TERMKEEP_SIDECAR_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      ...(options.nodeArgs ?? []),
    ],
    env: {
      ...process.env,
      HOME: home,
      ...options.env,
      TERMKEEP_DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      SIDECAR_URL: url,
      SIDECAR_SECRET: secret,
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  })
  watchKeeper(dataDir, child)
  let output = ''
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()))
  const generation = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sidecar did not start:\n${output}`)), 30_000)
    child.once('message', (m: { generation: number }) => {
      clearTimeout(timer)
      resolve(m.generation)
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
