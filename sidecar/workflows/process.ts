/**
 * A run's script process: a Node child of the sidecar, confined by Node's permission model
 * (`--experimental-permission` with nothing allowed but one worker thread: no file may be read or
 * written, no process started, no native addon loaded), with an empty environment and a bounded
 * heap. It reads no module: a one-line bootstrap evaluates the program the first IPC message
 * carries (program.ts). The `node:vm` context inside is not a security boundary on its own; this
 * process is the boundary, and cancel is SIGKILL, so even `while (true) {}` stops at once.
 * (Node 20's permission model does not cover the network: code that escaped the vm context could
 * open sockets, with nothing to authenticate with.)
 *
 * A watchdog worker thread kills the process when its parent is gone: a killed sidecar must not
 * leave a spinning script behind, and a spinning main thread cannot notice anything itself.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { WORKFLOW_SCRIPT_HEAP_MB, WORKFLOW_STDERR_TAIL_BYTES } from '../../schema/limits.ts'
import { scriptProgram } from './program.ts'
import type { ScriptStart, ToScript } from './protocol.ts'

const WATCHDOG = "const ppid = process.ppid; setInterval(() => { if (process.ppid !== ppid) process.kill(process.pid, 'SIGKILL') }, 250)"

const BOOTSTRAP = [
  "new (process.getBuiltinModule('node:worker_threads').Worker)(" + JSON.stringify(WATCHDOG) + ', { eval: true }).unref()',
  "process.once('disconnect', () => process.exit(0))",
  "process.once('message', (start) => (0, eval)(start.program)(start))",
].join('\n')

const FLAGS = [
  '--experimental-permission',
  '--allow-worker',
  '--disable-warning=ExperimentalWarning',
  `--max-old-space-size=${WORKFLOW_SCRIPT_HEAP_MB}`,
]

export interface ScriptExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** Set when the process could not be started at all. */
  error?: Error
}

export class ScriptProcess {
  readonly #child: ChildProcess
  readonly exited: Promise<ScriptExit>
  #stderr = ''

  constructor(start: ScriptStart, onMessage: (message: unknown) => void) {
    this.#child = spawn(process.execPath, [...FLAGS, '-e', BOOTSTRAP], {
      cwd: '/',
      env: {},
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    })
    this.exited = new Promise((resolve) => {
      this.#child.once('error', (error) => resolve({ code: null, signal: null, error }))
      this.#child.once('exit', (code, signal) => resolve({ code, signal }))
    })
    this.#child.stderr?.setEncoding('utf8')
    this.#child.stderr?.on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-WORKFLOW_STDERR_TAIL_BYTES)
    })
    this.#child.on('message', onMessage)
    // A message to a process that just died fails asynchronously; its exit is what counts.
    this.#child.on('error', () => {})
    this.send({ type: 'start', program: scriptProgram(), ...start })
  }

  get pid(): number | undefined {
    return this.#child.pid
  }

  /** The end of what the process wrote to stderr (V8's out-of-memory report, for one). */
  get stderr(): string {
    return this.#stderr.trim()
  }

  send(message: ToScript): void {
    if (this.#child.connected) this.#child.send(message, (error) => void error)
  }

  /** SIGKILL, at once (idempotent); `exited` tells when it is gone. */
  kill(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGKILL')
  }
}

/** A process's start time in clock ticks since boot (Linux /proc), or undefined if it is gone. */
export function processStartTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // Fields after the parenthesised command start at field 3 (state); starttime is field 22.
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19])
    return Number.isSafeInteger(ticks) ? ticks : undefined
  } catch {
    return undefined
  }
}

/** Kills the process if it is still the one recorded (same pid and start time), never a reuse. */
export function killIfSame(pid: number, startTicks: number): boolean {
  if (!(pid > 0) || processStartTicks(pid) !== startTicks) return false
  try {
    process.kill(pid, 'SIGKILL')
    return true
  } catch {
    return false
  }
}
