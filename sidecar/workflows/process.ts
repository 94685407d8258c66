/**
 * A run's script process: a Node child of the sidecar that runs the script in QuickJS compiled
 * to WebAssembly (program.ts: no host object exists in the script's engine), confined in two
 * more layers in case code ever escapes the engine.
 *
 * - Node's permission model (`--experimental-permission` with nothing allowed but reading the
 *   engine's own package directories and, without namespaces, one watchdog thread): no other file
 *   may be read, none written, no process started, no native addon loaded; an empty environment,
 *   `/` as its directory and a bounded heap. Its program is not a file: a short bootstrap
 *   evaluates the program the first line of its channel carries (a pipe, not Node's IPC:
 *   channel.ts). Node 20's permission model covers neither signals nor sockets.
 * - Linux namespaces, when the kernel allows them (probed once per sidecar: probeNamespaces()): the
 *   process is started by `setpriv --pdeathsig KILL unshare --user --map-root-user --pid --net
 *   --fork --kill-child node …`, so it is PID 1 of a PID namespace of its own (a signal reaches
 *   nothing outside it: `process.kill(sidecarPid)` is ESRCH) in a network namespace with no
 *   interface up (no TCP or UDP to anything, loopback included, no abstract Unix socket; a
 *   path-named Unix socket stays reachable: there is no mount namespace, and the permission
 *   model does not check socket paths).
 *   `unshare` is the child the sidecar sees (its pid is the run's pid); killing it kills the
 *   script (`--kill-child`), and the sidecar's death kills `unshare` (`--pdeathsig`), so a
 *   killed sidecar leaves no spinning script behind and cancel (SIGKILL) stops even
 *   `while (true) {}` at once. Without namespaces it runs as a plain child, with a watchdog
 *   thread that kills it when its parent is gone (a spinning main thread notices nothing), and
 *   an escaped script could signal the sidecar's user's processes and open sockets: it runs so
 *   only where the operator allowed it, and health says so (sandbox.ts, docs/workflows.md).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import { WORKFLOW_SANDBOX_PROBE_MS, WORKFLOW_STDERR_TAIL_BYTES } from './tuning.ts'
import { WORKFLOW_SCRIPT_HEAP_MB } from '../../schema/limits.ts'
import { processStat } from '../../local/proc.ts'
import { ProtocolViolation, readLines } from './channel.ts'
import { scriptProgram } from './program.ts'
import type { ScriptRequest, ToScript } from './protocol.ts'
import type { EngineFiles } from './quickjs.ts'
import { WORKFLOW_SCRIPT_MESSAGE_MAX_BYTES } from './tuning.ts'

// The parent's pid is read by the main thread as it starts: a worker reading it itself could come
// up after a parent that died at once, and never see it change.
const WATCHDOG = "setInterval(() => { if (process.ppid !== ppid) process.kill(process.pid, 'SIGKILL') }, 250)"

/**
 * The child's end of the channel (channel.ts): fd 3, a socket pair, newline-delimited JSON both
 * ways. The first line is the start, whose `program` is evaluated and called with it and the
 * `port` it talks through; later lines go to the program's listeners. The sidecar's end closing
 * ends the process.
 */
const CHANNEL = `
const channel = new (process.getBuiltinModule('node:net').Socket)({ fd: 3, readable: true, writable: true })
const listeners = []
const port = {
  send: (message) => void channel.write(JSON.stringify(message) + '\\n'),
  on: (listener) => void listeners.push(listener),
}
let pending = ''
let started = false
channel.setEncoding('utf8')
channel.on('data', (chunk) => {
  pending += chunk
  for (let at = pending.indexOf('\\n'); at >= 0; at = pending.indexOf('\\n')) {
    const message = JSON.parse(pending.slice(0, at))
    pending = pending.slice(at + 1)
    if (started) for (const listener of listeners) listener(message)
    else {
      started = true
      ;(0, eval)(message.program)(message, port)
    }
  }
})
channel.once('end', () => process.exit(0))
channel.once('error', () => process.exit(0))`

const bootstrap = (watchdog: boolean) =>
  [
    "'use strict'",
    ...(watchdog
      ? [
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the child's own template literal, evaluated there
          "new (process.getBuiltinModule('node:worker_threads').Worker)(`const ppid = ${process.ppid}; ` + " +
            JSON.stringify(WATCHDOG) +
            ', { eval: true }).unref()',
        ]
      : []),
    CHANNEL,
  ].join('\n')

const nodeFlags = (watchdog: boolean, engine: EngineFiles) => [
  '--experimental-permission',
  ...engine.readable.map((dir) => `--allow-fs-read=${dir}`),
  ...(watchdog ? ['--allow-worker'] : []),
  '--disable-warning=ExperimentalWarning',
  `--max-old-space-size=${WORKFLOW_SCRIPT_HEAP_MB}`,
]

const NAMESPACES = ['--user', '--map-root-user', '--pid', '--net', '--fork', '--kill-child']

/** How this sidecar runs and confines script processes. */
export interface Sandbox {
  /** The script's engine, which the process loads (and may read nothing else). */
  engine: EngineFiles
  /** The argv that runs a program in new namespaces, or undefined when namespaces are unavailable. */
  wrapper?: string[]
  /** Why there are no namespaces. */
  missing?: string
}

/** Namespaces as probed: the wrapper argv, or why there is none. */
export type Namespaces = Omit<Sandbox, 'engine'>

/** The first executable `name` on PATH (util-linux's unshare and setpriv), or undefined. */
function onPath(name: string, path = process.env.PATH ?? '/usr/bin:/bin'): string | undefined {
  for (const dir of path.split(':').filter(Boolean)) {
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch {
      // not here
    }
  }
  return undefined
}

/** Once per sidecar: can a script process start in new user, PID and network namespaces here? */
export async function probeNamespaces(
  tools: { unshare?: string; setpriv?: string } = { unshare: onPath('unshare'), setpriv: onPath('setpriv') },
): Promise<Namespaces> {
  const { unshare, setpriv } = tools
  if (!unshare || !setpriv) return { missing: `${!unshare ? 'unshare' : 'setpriv'} (util-linux) is not installed` }
  const wrapper = [setpriv, '--pdeathsig', 'KILL', unshare, ...NAMESPACES]
  const why = await new Promise<string | undefined>((resolve) => {
    const argv = [...wrapper.slice(1), process.execPath, '-e', 'process.exit(process.pid === 1 ? 0 : 3)']
    execFile(wrapper[0], argv, { env: {}, cwd: '/', timeout: WORKFLOW_SANDBOX_PROBE_MS, encoding: 'utf8' }, (error, _out, stderr) => {
      if (!error) return resolve(undefined)
      const code = (error as { code?: unknown }).code
      resolve(stderr.trim().split('\n').at(-1) || (typeof code === 'number' ? `exit ${code}` : error.message))
    })
  })
  if (why === undefined) return { wrapper }
  return { missing: `unshare cannot create user, PID and network namespaces here (${why}); user namespaces may be disabled` }
}

export interface ScriptExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** Set when the process could not be started at all. */
  error?: Error
}

export class ScriptProcess {
  readonly #child: ChildProcess
  readonly #channel: Socket
  readonly exited: Promise<ScriptExit>
  #stderr = ''

  /**
   * `onMessage` gets each message as parsed JSON, or a ProtocolViolation (a line that is not JSON
   * or too long: the process is killed then). `program` is for tests of the confinement (an
   * escaped script); runs get scriptProgram().
   */
  constructor(request: ScriptRequest, onMessage: (message: unknown) => void, sandbox: Sandbox, program = scriptProgram()) {
    const start = { ...request, engine: { ...request.engine, core: sandbox.engine.core, variant: sandbox.engine.variant } }
    const watchdog = !sandbox.wrapper
    const node = [process.execPath, ...nodeFlags(watchdog, sandbox.engine), '-e', bootstrap(watchdog)]
    const argv = sandbox.wrapper ? [...sandbox.wrapper, ...node] : node
    this.#child = spawn(argv[0], argv.slice(1), {
      cwd: '/',
      env: {},
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    })
    this.exited = new Promise((resolve) => {
      this.#child.once('error', (error) => resolve({ code: null, signal: null, error }))
      this.#child.once('exit', (code, signal) => resolve({ code, signal }))
    })
    this.#child.stderr?.setEncoding('utf8')
    this.#child.stderr?.on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-WORKFLOW_STDERR_TAIL_BYTES)
    })
    this.#channel = this.#child.stdio[3] as Socket
    // A write to a process that just died fails (EPIPE); its exit is what counts.
    this.#channel.on('error', () => {})
    const violated = (why: string) => {
      this.kill()
      onMessage(new ProtocolViolation(why))
    }
    readLines(
      this.#channel,
      WORKFLOW_SCRIPT_MESSAGE_MAX_BYTES,
      (line) => {
        let message: unknown
        try {
          message = JSON.parse(line)
        } catch {
          return violated('the script process sent a line that is not JSON')
        }
        onMessage(message)
      },
      violated,
    )
    this.send({ type: 'start', program, ...start })
  }

  get pid(): number | undefined {
    return this.#child.pid
  }

  /** The end of what the process wrote to stderr (V8's out-of-memory report, for one). */
  get stderr(): string {
    return this.#stderr.trim()
  }

  send(message: ToScript): void {
    if (this.#channel.writable) this.#channel.write(`${JSON.stringify(message)}\n`)
  }

  /** SIGKILL, at once (idempotent); `exited` tells when it is gone. */
  kill(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGKILL')
  }
}

/** Kills the process if it is still the one recorded (same pid and start time), never a reuse. */
export function killIfSame(pid: number, startTicks: number): boolean {
  if (!(pid > 0) || processStat(pid)?.startTicks !== startTicks) return false
  try {
    process.kill(pid, 'SIGKILL')
    return true
  } catch {
    return false
  }
}
