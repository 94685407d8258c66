/**
 * `termkeep serve` as a real process (what `npm start` runs), for tests that drive it from outside:
 * start it on free ports, wait for its start-up lines, call its API with the admin token it prints,
 * find its sidecar's pid by the sidecar port, stop it by pid — and its data directory's keeper,
 * which a stop of serve leaves running by design.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { processStat } from '../../local/proc.ts'
import { UNSET_CONFIG } from '../smoke/targets.ts'
import { stopKeeper, watchKeeper } from './keepers.ts'
import { freePort, waitFor } from './ports.ts'

const BIN = new URL('../../cli/bin.js', import.meta.url).pathname
const LAUNCHER = new URL('../../termkeep', import.meta.url).pathname

export interface Served {
  child: ChildProcess
  output: () => string
  exited: Promise<number | null>
}

export interface ServeOptions {
  /** A process group of its own, as a shell's foreground job has: Ctrl-C is SIGINT to the group. */
  detached?: boolean
  /** Another checkout's CLI entry, cli/bin.js or cli/main.ts (an upgrade test runs a different build). */
  main?: string
  /** Through the clone's `./termkeep` launcher, as a person runs it, not as npm start does. */
  launcher?: boolean
}

/** Spawns `termkeep serve` with `env` over the test process's environment (config vars unset). */
export function serve(env: Record<string, string>, options: ServeOptions = {}): Served {
  const main = options.main ?? BIN
  // As npm start runs it (cli/bin.js); a checkout's cli/main.ts runs through tsx.
  const entry = main.endsWith('.ts') ? ['--import', 'tsx', main] : [main]
  const args = options.launcher ? [LAUNCHER, 'serve'] : [...entry, 'serve']
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...UNSET_CONFIG, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached,
  })
  if (env.TERMKEEP_DATA_DIR) watchKeeper(env.TERMKEEP_DATA_DIR, child)
  let output = ''
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()))
  // 'close', not 'exit': the exit code is known only once everything it printed was read too.
  const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)))
  return { child, output: () => output, exited }
}

/** Running (a zombie counts as gone: where PID 1 does not reap orphans it would linger forever). */
export function alive(pid: number): boolean {
  const stat = processStat(pid)
  return stat !== undefined && !stat.zombie
}

/** The pid listening on a loopback `port` (the sidecar, by its SIDECAR_URL port). */
export function listenerPid(port: number): number | undefined {
  const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' })
  const match = out.match(/pid=(\d+)/)
  return match ? Number(match[1]) : undefined
}

export interface ServedStack extends Served {
  url: string
  sidecarPort: number
  dataDir: string
  token: string
  /** A call to the API with the admin token; `body` is sent as JSON (or as is, for bytes/strings). */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>
  /** `call` on a connection of its own, closed after it: on a host so loaded that a client may
   * reuse a kept-alive connection just as the server closes it (a client-side race, not the API's). */
  callFresh(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
  /** SIGTERM, and the exit code; then the keeper (and its terminals) unless `terminals: 'keep'`. */
  stop(options?: { terminals?: 'end' | 'keep' }): Promise<number | null>
}

/** Starts `serve` on free ports in a fresh data directory and waits for its admin token line. */
export async function startServe(env: Record<string, string> = {}, options: ServeOptions = {}): Promise<ServedStack> {
  const dataDir = env.TERMKEEP_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'termkeep-served-'))
  const port = await freePort()
  let sidecarPort = await freePort()
  while (sidecarPort === port) sidecarPort = await freePort()
  const served = serve({ TERMKEEP_DATA_DIR: dataDir, PORT: String(port), SIDECAR_URL: `http://127.0.0.1:${sidecarPort}`, ...env }, options)
  try {
    await waitFor(async () => served.output().includes('admin token'), 60_000, 'serve to start')
  } catch (error) {
    served.child.kill('SIGKILL')
    throw new Error(`${(error as Error).message}; serve printed:\n${served.output()}`)
  }
  const token = served.output().match(/admin token \(shown once, stored hashed\): (tk_\S+)/)![1]!
  const url = `http://127.0.0.1:${port}`
  return {
    ...served,
    url,
    sidecarPort,
    dataDir,
    token,
    call: (method, path, body, headers = {}) => {
      const raw = typeof body === 'string' || body instanceof Uint8Array
      return fetch(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined || raw ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : raw ? (body as BodyInit) : JSON.stringify(body),
      })
    },
    callFresh: (method, path, body) =>
      new Promise((resolve, reject) => {
        const headers: Record<string, string> = { authorization: `Bearer ${token}` }
        if (body !== undefined) headers['content-type'] = 'application/json'
        const outgoing = request(`${url}${path}`, { method, headers, agent: false })
        outgoing.once('error', reject)
        outgoing.once('response', (response) => {
          let text = ''
          response.setEncoding('utf8')
          response.on('data', (c: string) => (text += c))
          response.once('end', () => resolve({ status: response.statusCode!, body: text ? JSON.parse(text) : undefined }))
        })
        outgoing.end(body === undefined ? undefined : JSON.stringify(body))
      }),
    stop: async (options = {}) => {
      served.child.kill('SIGTERM')
      const code = await served.exited
      if (options.terminals !== 'keep') await stopKeeper(dataDir)
      return code
    },
  }
}
