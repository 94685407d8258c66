/**
 * `termkeep serve` keeps its sidecar running: a sidecar that crashes (killed, or exits with an
 * error) is started again after a backoff, while the API stays up and serves everything stored
 * (live routes answer 503 `sidecar/unavailable` until the new generation is ready). A sidecar that
 * stops cleanly (exit code 0: it was asked to stop) is not restarted, like systemd's
 * Restart=on-failure. Stopping the supervisor stops the sidecar and waits for its own shutdown.
 */
import type { ChildProcess } from 'node:child_process'
import { SIDECAR_HEALTHY_RESET_MS, SIDECAR_RESTART_MAX_MS, SIDECAR_RESTART_MIN_MS, SIDECAR_STOP_GRACE_MS } from './tuning.ts'

/** A sidecar being started: its process, and the generation it announces once ready (a sidecar
 * that exits first, or does not get there in time, rejects it). */
export interface StartingSidecar {
  child: ChildProcess
  ready: Promise<number>
}

interface StartedSidecar {
  child: ChildProcess
  generation: number
}

export interface SupervisorOptions {
  start: () => StartingSidecar
  /** A line for the operator (restarts, their causes). */
  log: (line: string) => void
  /** The clock (tests). */
  now?: () => number
}

/**
 * The wait before restart number `restarts` (1, 2, …) of a sidecar that ran `ranMs` before its
 * last crash: SIDECAR_RESTART_MIN_MS, doubling per crash up to SIDECAR_RESTART_MAX_MS, from the
 * minimum again once a sidecar stayed up SIDECAR_HEALTHY_RESET_MS.
 */
export function restartDelay(previousMs: number | undefined, ranMs: number): number {
  if (previousMs === undefined || ranMs >= SIDECAR_HEALTHY_RESET_MS) return SIDECAR_RESTART_MIN_MS
  return Math.min(previousMs * 2, SIDECAR_RESTART_MAX_MS)
}

/** "killed by SIGKILL" / "exited with code 1": why a process ended, for the log. */
export function exitCause(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `was killed by ${signal}` : `exited with code ${code}`
}

export class SidecarSupervisor {
  readonly #options: SupervisorOptions
  readonly #now: () => number
  #current: StartedSidecar | undefined
  #readyAt = 0
  #delay: number | undefined
  #restarts = 0
  #timer: NodeJS.Timeout | undefined
  #starting: StartingSidecar | undefined
  #stopping = false
  #onGone: ((reason: string) => void) | undefined

  constructor(options: SupervisorOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
  }

  /** The sidecar's process while one runs (for tests and the log). */
  get child(): ChildProcess | undefined {
    return this.#current?.child
  }

  /** How many times a crashed sidecar was started again. */
  get restarts(): number {
    return this.#restarts
  }

  /**
   * Starts the first sidecar (a failure rejects: serve stops with its reason). `onGone` is called
   * once when the sidecar stopped by itself, cleanly: there is nothing to supervise any more.
   */
  async start(onGone: (reason: string) => void): Promise<void> {
    this.#onGone = onGone
    const starting = this.#options.start()
    this.#starting = starting
    try {
      this.#adopt({ child: starting.child, generation: await starting.ready })
    } finally {
      this.#starting = undefined
    }
  }

  /** From now on an exit is expected: nothing is restarted or reported (a Ctrl-C in a terminal
   * reaches the sidecar too, which then stops by itself while serve is closing the API). */
  stopping(): void {
    this.#stopping = true
    clearTimeout(this.#timer)
  }

  /** Stops the sidecar (SIGTERM, SIGKILL after SIDECAR_STOP_GRACE_MS) and waits until it exited;
   * a restart that was due is cancelled. */
  async stop(): Promise<void> {
    this.stopping()
    // A sidecar starting now is stopped like a running one.
    const child = this.#current?.child ?? this.#starting?.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), SIDECAR_STOP_GRACE_MS)
    await exited
    clearTimeout(timer)
  }

  #adopt(started: StartedSidecar): void {
    this.#current = started
    this.#readyAt = this.#now()
    started.child.once('exit', (code, signal) => this.#exited(started, code, signal))
  }

  #exited(started: StartedSidecar, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#current !== started) return
    this.#current = undefined
    if (this.#stopping) return
    const ran = this.#now() - this.#readyAt
    const what = `the sidecar (pid ${started.child.pid}, generation ${started.generation}) ${exitCause(code, signal)} after ${seconds(ran)}`
    if (code === 0 && !signal) {
      this.#options.log(`termkeep: ${what}; stopping`)
      this.#onGone?.(what)
      return
    }
    this.#delay = restartDelay(this.#delay, ran)
    this.#scheduleRestart(what)
  }

  #scheduleRestart(what: string): void {
    this.#options.log(`termkeep: ${what}; starting it again in ${seconds(this.#delay!)} (restart ${this.#restarts + 1})`)
    this.#timer = setTimeout(() => void this.#restart(), this.#delay)
  }

  async #restart(): Promise<void> {
    if (this.#stopping) return
    this.#restarts++
    const starting = this.#options.start()
    this.#starting = starting
    try {
      const started = { child: starting.child, generation: await starting.ready }
      if (this.#stopping) return // stop() takes care of it
      this.#adopt(started)
      this.#options.log(`termkeep: the sidecar is up again: generation ${started.generation} (pid ${started.child.pid})`)
    } catch (error) {
      if (this.#stopping) return
      this.#delay = restartDelay(this.#delay, 0)
      this.#scheduleRestart(`the sidecar did not start (${(error as Error).message})`)
    } finally {
      this.#starting = undefined
    }
  }
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms / 1000)} s`
}
