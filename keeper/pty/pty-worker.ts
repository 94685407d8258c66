/**
 * The PTY thread: it owns every terminal's process (node-pty, through PtyProcess and its tail-loss
 * fix), reads the masters, gathers the reads (journal/gather.ts) and hands each flush to the main
 * thread (transferred, not copied), which journals it (spool write, index) and wakes the readers.
 *
 * Why a thread of its own: a PTY holds ~64 KiB. While the thread that reads it is busy elsewhere
 * for more than ~1.5 ms, `cat` stops writing. On the main thread the reads competed with SSE
 * encoding, socket writes, the emulator feed and HTTP: measured here, a reader whose loop is busy
 * half the time gets 15 MiB/s out of a PTY that gives 40 MiB/s to an idle one. Here nothing else
 * runs (not even the spool write), so the PTY is drained whenever it has data.
 */
import { parentPort } from 'node:worker_threads'
import { hopMark } from '../../common/hop-trace.ts'
import { writeHopTrace } from '../../local/hop-trace.ts'
import { Gatherer } from '../../local/journal/gather.ts'
import { PTY_UNJOURNALED_MAX_BYTES } from '../tuning.ts'
import type { FromPtyThread, ToPtyThread } from './pty-protocol.ts'
import { PtyProcess } from './pty-process.ts'

const port = parentPort
if (!port) throw new Error('PTY thread started outside a worker thread')

writeHopTrace()

function post(message: FromPtyThread, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(message, transfer)
}

class Recorder {
  readonly #pty: PtyProcess
  readonly #gather: Gatherer
  /** Handed over, not yet confirmed journaled (PTY_UNJOURNALED_MAX_BYTES). */
  #unjournaled = 0
  #paused = false

  constructor(
    readonly id: number,
    pty: PtyProcess,
  ) {
    this.#pty = pty
    this.#gather = new Gatherer((parts, total) => this.#hand(parts, total))
    pty.onData((bytes) => {
      hopMark('PTY thread: read')
      this.#gather.add(bytes)
    })
    pty.onEnd(() => {
      this.#gather.flush()
      post({ type: 'end', id })
    })
    pty.onBacklog((bytes) => post({ type: 'backlog', id, bytes }))
    pty.onExit((exit) => {
      post({ type: 'exit', id, exit })
      recorders.delete(id)
    })
  }

  write(bytes: Uint8Array): void {
    hopMark('PTY thread: write')
    this.#pty.write(bytes)
  }

  resize(cols: number, rows: number): void {
    this.#gather.flush()
    this.#pty.resize(cols, rows)
    post({ type: 'resized', id: this.id, cols, rows, applied: true })
  }

  forceClose(): void {
    this.#resume()
    this.#pty.forceClose()
  }

  journaled(bytes: number): void {
    this.#unjournaled -= bytes
    if (this.#unjournaled <= PTY_UNJOURNALED_MAX_BYTES / 2) this.#resume()
  }

  #resume(): void {
    if (!this.#paused) return
    this.#paused = false
    this.#pty.resume()
  }

  /** One buffer of its own per flush, so it can be transferred (Buffer.concat may use the pool). */
  #hand(parts: Uint8Array[], total: number): void {
    const bytes = new Uint8Array(new ArrayBuffer(total))
    let at = 0
    for (const part of parts) {
      bytes.set(part, at)
      at += part.length
    }
    post({ type: 'data', id: this.id, bytes }, [bytes.buffer])
    this.#unjournaled += total
    if (!this.#paused && this.#unjournaled > PTY_UNJOURNALED_MAX_BYTES) {
      this.#paused = true
      this.#pty.pause()
    }
  }
}

const recorders = new Map<number, Recorder>()

port.on('message', (message: ToPtyThread) => {
  // Between messages no native call into this thread is in progress: ending here is safe.
  if (message.type === 'close') process.exit(0)
  if (message.type === 'spawn') {
    try {
      const pty = new PtyProcess(message.options)
      recorders.set(message.id, new Recorder(message.id, pty))
      post({ type: 'spawned', id: message.id, pid: pty.pid, ttyIndex: pty.ttyIndex })
    } catch (error) {
      post({ type: 'spawn-failed', id: message.id, message: (error as Error).message })
    }
    return
  }
  const recorder = recorders.get(message.id)
  if (!recorder) {
    // Exited: input for it is moot; a resize is answered, so nobody waits for it.
    if (message.type === 'resize') post({ type: 'resized', id: message.id, cols: message.cols, rows: message.rows, applied: false })
    return
  }
  switch (message.type) {
    case 'write':
      recorder.write(message.bytes)
      return
    case 'resize':
      recorder.resize(message.cols, message.rows)
      return
    case 'force-close':
      recorder.forceClose()
      return
    case 'journaled':
      recorder.journaled(message.bytes)
      return
  }
})
