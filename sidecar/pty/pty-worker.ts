/**
 * The PTY thread: it owns every terminal's process (node-pty, through PtyProcess and its tail-loss
 * fix), reads the masters, gathers the reads (journal/gather.ts) and appends each flush to the
 * terminal's spool file, then hands the flush to the main thread (transferred, not copied), which
 * indexes it and wakes the readers.
 *
 * Why a thread of its own: a PTY holds ~64 KiB. While the thread that reads it is busy elsewhere
 * for more than ~1.5 ms, `cat` stops writing. On the main thread the reads competed with SSE
 * encoding, socket writes, the emulator feed and HTTP: measured here, a reader whose loop is busy
 * half the time gets 15 MiB/s out of a PTY that gives 40 MiB/s to an idle one. Here nothing else
 * runs, so the PTY is drained whenever it has data.
 */
import { closeSync, openSync, writeSync } from 'node:fs'
import { parentPort } from 'node:worker_threads'
import { Gatherer } from '../journal/gather.ts'
import type { FromPtyThread, ToPtyThread } from './pty-protocol.ts'
import { PtyProcess } from './pty-process.ts'

const port = parentPort
if (!port) throw new Error('PTY thread started outside a worker thread')

function post(message: FromPtyThread, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(message, transfer)
}

class Recorder {
  readonly #pty: PtyProcess
  #fd: number | undefined
  #size = 0
  readonly #gather: Gatherer

  constructor(
    readonly id: number,
    pty: PtyProcess,
    fd: number,
  ) {
    this.#pty = pty
    this.#fd = fd
    this.#gather = new Gatherer((parts, total) => this.#append(parts, total))
    pty.onData((bytes) => this.#gather.add(bytes))
    pty.onEnd(() => {
      this.#gather.flush()
      this.#closeSpool()
      post({ type: 'end', id })
    })
    pty.onExit((exit) => {
      post({ type: 'exit', id, exit })
      recorders.delete(id)
    })
  }

  write(bytes: Uint8Array): void {
    this.#pty.write(bytes)
  }

  resize(cols: number, rows: number): void {
    this.#gather.flush()
    this.#pty.resize(cols, rows)
    post({ type: 'resized', id: this.id, cols, rows, applied: true })
  }

  forceClose(): void {
    this.#pty.forceClose()
  }

  #append(parts: Uint8Array[], total: number): void {
    if (this.#fd === undefined) return
    // One buffer of its own per flush, so it can be transferred (Buffer.concat may use the pool).
    const bytes = new Uint8Array(new ArrayBuffer(total))
    let at = 0
    for (const part of parts) {
      bytes.set(part, at)
      at += part.length
    }
    const offset = this.#size
    try {
      for (let done = 0; done < total; ) done += writeSync(this.#fd, bytes, done, total - done, offset + done)
    } catch (error) {
      this.#closeSpool()
      post({ type: 'failed', id: this.id, message: `spool write failed: ${(error as Error).message}` })
      return
    }
    this.#size += total
    post({ type: 'data', id: this.id, offset, bytes }, [bytes.buffer])
  }

  #closeSpool(): void {
    if (this.#fd === undefined) return
    closeSync(this.#fd)
    this.#fd = undefined
  }
}

const recorders = new Map<number, Recorder>()

port.on('message', (message: ToPtyThread) => {
  if (message.type === 'spawn') {
    let fd: number | undefined
    try {
      fd = openSync(message.spoolPath, 'r+')
      const pty = new PtyProcess(message.options)
      recorders.set(message.id, new Recorder(message.id, pty, fd))
      post({ type: 'spawned', id: message.id, pid: pty.pid })
    } catch (error) {
      if (fd !== undefined) closeSync(fd)
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
  }
})
