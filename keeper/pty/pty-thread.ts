/**
 * The keeper main thread's side of the PTY thread (pty-worker.ts): `PtyThread.spawn` starts a
 * process there and returns a `RemotePty` whose output arrives in flushes of gathered reads; this
 * side journals each one (`OutputSink.appendFlushed`: the journal files, then the sidecar).
 * Input, resizes and a forced close are sent over; a resize resolves once its Resize record is
 * journaled after every byte read before it.
 */
import { Worker } from 'node:worker_threads'
import { hopMark } from '../../common/hop-trace.ts'
import { workerBundleSource } from '../../local/worker-bundle.ts'
import { Backoff } from '../backoff.ts'
import { PTY_EXIT_WAIT_MS } from '../tuning.ts'
import type { PtyExit, PtySpawnOptions } from './pty-process.ts'
import type { FromPtyThread, ToPtyThread } from './pty-protocol.ts'

/** Where a terminal's output goes (keeper/terminals.ts: its journal files, then the sidecar). */
export interface OutputSink {
  /** The byte source reached EOF (`end` was applied). */
  readonly ended: boolean
  /** Journals one flush; throws when it cannot be written now (it is held and tried again). */
  appendFlushed(bytes: Uint8Array): void
  /** Journals a Resize record after every byte before it; throws like appendFlushed. */
  appendResize(cols: number, rows: number): void
}

/** What a RemotePty reports beside its output: a journal that cannot write (and writes again),
 * and output given up on (a force-close of a paused terminal). */
export interface OutputTrouble {
  failing(error: Error, first: boolean): void
  recovered(): void
  lost(bytes: number, error: Error | undefined): void
}

const WORKER_URL = new URL('./pty-worker.ts', import.meta.url)
/** The PTY thread runs from a bundle, not through tsx: tsx's loader in its isolate cost the keeper
 * ~25–40 MiB (local/worker-bundle.ts). node-pty loads its addon at run time: it stays an import. */
const NATIVES = ['node-pty']

/** SIGKILL to a terminal's process group (its shell leads a session of its own), then to the pid. */
function killGroup(pid: number): void {
  if (!(pid > 0)) return // kill(0) or kill(-0) would signal the keeper's own group
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL')
    } catch {
      // already gone
    }
  }
}

export class RemotePty {
  pid = 0
  /** The slave's /dev/pts index, proven from the master descriptor (pty-process.ts). */
  ttyIndex: number | undefined
  #onData: () => void = () => {}
  #onEnd: () => void = () => {}
  #onExit: (exit: PtyExit) => void = () => {}
  #onBacklog: (bytes: number) => void = () => {}
  #resizes: Array<() => void> = []
  #endWaiters: Array<() => void> = []
  #exitWaiters: Array<() => void> = []
  #ended = false
  #exited = false
  /** Bytes journaled but not yet confirmed to the PTY thread (PTY_UNJOURNALED_MAX_BYTES). */
  #unconfirmed = 0
  #confirmSoon: NodeJS.Immediate | undefined
  /** Messages waiting behind output the journal could not write, oldest first; the retry timer,
   * its next wait and the write's failure. */
  #held: FromPtyThread[] = []
  /** Set by a force-close (or a lost thread): output that cannot be written is dropped. */
  #giveUpOnHold = false
  readonly #retry: Backoff
  #writeFailure: Error | undefined

  constructor(
    private readonly thread: PtyThread,
    readonly id: number,
    readonly journal: OutputSink,
    private readonly trouble: OutputTrouble,
  ) {
    this.#retry = new Backoff({ failing: (error, first) => trouble.failing(error, first), recovered: () => trouble.recovered() })
  }

  /** Output was journaled. */
  onData(listener: () => void): void {
    this.#onData = listener
  }

  /** The byte source closed (after its last bytes were journaled). Fires before onExit. */
  onEnd(listener: () => void): void {
    this.#onEnd = listener
  }

  onExit(listener: (exit: PtyExit) => void): void {
    this.#onExit = listener
  }

  /** Input bytes waiting for the program to read them (reported when it changes while any wait). */
  onBacklog(listener: (bytes: number) => void): void {
    this.#onBacklog = listener
  }

  /** Sends input to the PTY thread (the sidecar bounds what a program leaves unread). */
  write(bytes: Uint8Array): void {
    hopMark('keeper: input → PTY thread')
    if (!this.#exited) this.thread.post({ type: 'write', id: this.id, bytes })
  }

  /** Resizes the PTY; resolves once the Resize record is journaled in output order. */
  resize(cols: number, rows: number): Promise<void> {
    // The thread forgot an exited process: no `resized` would come back.
    if (this.#exited) return Promise.resolve()
    return new Promise((resolve) => {
      this.#resizes.push(resolve)
      this.thread.post({ type: 'resize', id: this.id, cols, rows })
    })
  }

  /** Closes the master after reading whatever the kernel still holds; resolves at the end of the
   * byte source (everything read is journaled by then). */
  forceClose(): Promise<void> {
    // From now on what cannot be written is dropped, not held: a close must not wait for space.
    this.#giveUpOnHold = true
    this.#dropHeld()
    if (this.#ended) return Promise.resolve()
    const ended = new Promise<void>((resolve) => this.#endWaiters.push(resolve))
    this.thread.post({ type: 'force-close', id: this.id })
    return ended
  }

  /** @internal a message from the PTY thread for this terminal. */
  receive(message: FromPtyThread): void {
    if (message.type === 'backlog') return this.#onBacklog(message.bytes)
    // Behind output the journal could not write yet, everything waits its turn (order is the
    // journal's contract: a resize or the end after the bytes read before them).
    if (this.#held.length > 0) {
      this.#held.push(message)
      return
    }
    if (this.#apply(message)) return
    if (this.#giveUpOnHold) {
      this.#held.push(message)
      this.#dropHeld()
      return
    }
    this.#hold(message)
  }

  /** Applies one message; false when its bytes could not be written (they are not confirmed). */
  #apply(message: FromPtyThread): boolean {
    switch (message.type) {
      case 'data':
        // The journal ends with this source (`end`); a flush after that would be a bug here, and
        // must not take the keeper down with it.
        if (this.journal.ended) {
          this.#confirm(message.bytes.length)
          console.error(`termkeep keeper: ${message.bytes.length} bytes after the end of a terminal's output, dropped`)
          return true
        }
        try {
          this.journal.appendFlushed(message.bytes)
        } catch (error) {
          this.#writeFailure = error as Error
          return false
        }
        this.#retry.succeeded()
        // Confirmed once journaled: the PTY thread stops reading while too much is unconfirmed
        // (PTY_UNJOURNALED_MAX_BYTES), so a journal that cannot write pauses the program.
        this.#confirm(message.bytes.length)
        this.#onData()
        return true
      case 'resized':
        if (message.applied && !this.journal.ended) {
          try {
            this.journal.appendResize(message.cols, message.rows)
          } catch (error) {
            this.#writeFailure = error as Error
            return false
          }
        }
        this.#resizes.shift()?.()
        return true
      case 'end':
        this.#end()
        return true
      case 'exit':
        this.#exit(message.exit)
        return true
      default:
        return true
    }
  }

  /** Keeps a flush the journal could not write (a full disk) and tries it again with backoff. */
  #hold(message: FromPtyThread): void {
    this.#held.push(message)
    this.#retryLater()
  }

  #retryLater(): void {
    this.#retry.failed(this.#writeFailure ?? new Error('journal write failed'), () => {
      while (this.#held.length > 0) {
        if (!this.#apply(this.#held[0]!)) return this.#retryLater()
        this.#held.shift()
      }
    })
  }

  /** Gives up on output that could not be journaled (the terminal is being force-closed or its
   * thread is gone): what follows it (a resize, the end, the exit) still applies. */
  #dropHeld(): void {
    this.#retry.cancel()
    const held = this.#held.splice(0)
    const lost = held.reduce((sum, m) => sum + (m.type === 'data' ? m.bytes.length : 0), 0)
    if (lost > 0) this.trouble.lost(lost, this.#writeFailure)
    // Dropped bytes count as taken, so the PTY thread reads (and ends) again.
    for (const message of held) {
      if (message.type === 'data') this.#confirm(message.bytes.length)
      else this.#apply(message)
    }
  }

  /**
   * Confirms at the end of this turn, once for every flush of the turn: after the readers at the
   * live edge were served (an echo's frame goes out first), and with one message, not one per flush.
   */
  #confirm(bytes: number): void {
    this.#unconfirmed += bytes
    this.#confirmSoon ??= setImmediate(() => {
      this.#confirmSoon = undefined
      // Exited (or the thread was lost): nobody waits for it, and a post would start a new thread.
      if (!this.#exited) this.thread.post({ type: 'journaled', id: this.id, bytes: this.#unconfirmed })
      this.#unconfirmed = 0
    })
  }

  /** @internal the PTY thread is gone: nothing more will come. */
  lost(): void {
    this.#giveUpOnHold = true
    this.#dropHeld()
    this.#end()
    this.#exit({ exitCode: null, signal: null })
  }

  #end(): void {
    if (this.#ended) return
    this.#ended = true
    this.#onEnd()
    for (const resolve of this.#endWaiters.splice(0)) resolve()
  }

  #exit(exit: PtyExit): void {
    if (this.#exited) return
    this.#exited = true
    for (const resolve of this.#resizes.splice(0)) resolve()
    this.#onExit(exit)
    this.thread.forget(this.id)
    this.#exitWaiters.splice(0).forEach((resolve) => resolve())
  }

  /** @internal resolves once the process's exit was reported. */
  exited(): Promise<void> {
    return this.#exited ? Promise.resolve() : new Promise((resolve) => this.#exitWaiters.push(resolve))
  }
}

export class PtyThread {
  #worker: Worker | undefined
  readonly #ptys = new Map<number, RemotePty>()
  readonly #spawning = new Map<number, { resolve: (pty: RemotePty) => void; reject: (error: Error) => void; pty: RemotePty }>()
  #nextId = 1
  #closed = false

  /** Starts `options` in the PTY thread; its output is journaled into `journal`. Rejects with the
   * OS's reason when the spawn fails. */
  spawn(options: PtySpawnOptions, journal: OutputSink, trouble: OutputTrouble): Promise<RemotePty> {
    if (this.#closed) return Promise.reject(new Error('the PTY thread is closed (the keeper is stopping)'))
    const id = this.#nextId++
    const pty = new RemotePty(this, id, journal, trouble)
    return new Promise((resolve, reject) => {
      this.#spawning.set(id, { resolve, reject, pty })
      this.post({ type: 'spawn', id, options })
    })
  }

  /** @internal (after close, messages are dropped: a late keystroke must not start a thread) */
  post(message: ToPtyThread): void {
    if (!this.#closed) this.#start().postMessage(message)
  }

  /** @internal the terminal exited: no message for it follows. */
  forget(id: number): void {
    this.#ptys.delete(id)
  }

  /**
   * Kills what still runs, waits until every exit was reported, then lets the thread end itself.
   * node-pty reports an exit by calling into the PTY thread from a thread of its own; terminating
   * the PTY thread from outside while such a call runs (or is on its way) is a fatal N-API error
   * that takes the whole keeper down. The thread ends itself between messages, when no call is in
   * progress; only if that takes longer than PTY_EXIT_WAIT_MS in all is it terminated.
   */
  async close(): Promise<void> {
    this.#closed = true
    const worker = this.#worker
    if (!worker) return
    this.#worker = undefined
    const deadline = Date.now() + PTY_EXIT_WAIT_MS
    const within = (promise: Promise<unknown>) => {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, deadline - Date.now()))))
      return Promise.race([promise, late]).finally(() => clearTimeout(timer))
    }
    const running = [...this.#ptys.values()]
    for (const pty of running) killGroup(pty.pid)
    await within(Promise.all(running.map((pty) => pty.exited())))
    const ended = new Promise((resolve) => worker.once('exit', resolve))
    worker.postMessage({ type: 'close' } satisfies ToPtyThread)
    if ((await within(ended)) === 'late') await worker.terminate()
  }

  #start(): Worker {
    if (this.#worker) return this.#worker
    const worker = new Worker(workerBundleSource(WORKER_URL, NATIVES), { execArgv: [] })
    // The processes it hosts do not keep the keeper alive; the keeper kills them when it stops.
    worker.unref()
    worker.on('message', (message: FromPtyThread) => this.#receive(message))
    const lost = (error: Error) => {
      if (this.#worker !== worker) return
      this.#worker = undefined
      console.error('termkeep keeper: the PTY thread stopped', error)
      for (const { reject } of this.#spawning.values()) reject(error)
      this.#spawning.clear()
      for (const pty of [...this.#ptys.values()]) pty.lost()
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`PTY thread exited with ${code}`)))
    this.#worker = worker
    return worker
  }

  #receive(message: FromPtyThread): void {
    if (message.type === 'spawned' || message.type === 'spawn-failed') {
      const pending = this.#spawning.get(message.id)
      if (!pending) return
      this.#spawning.delete(message.id)
      if (message.type === 'spawn-failed') return pending.reject(new Error(message.message))
      pending.pty.pid = message.pid
      pending.pty.ttyIndex = message.ttyIndex
      this.#ptys.set(message.id, pending.pty)
      return pending.resolve(pending.pty)
    }
    const pty = this.#ptys.get(message.id)
    if (pty) pty.receive(message)
    else if (message.type === 'data') this.post({ type: 'journaled', id: message.id, bytes: message.bytes.length })
  }
}
