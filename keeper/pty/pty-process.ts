/**
 * One PTY and its child, over node-pty 1.1.0, with the tail-loss hazard fixed.
 *
 * Why node-pty loses the tail (microsoft/node-pty#72): the master is read through a
 * `tty.ReadStream`, i.e. a libuv stream. When the child exits, the kernel reports POLLHUP on the
 * master. libuv's `uv__stream_io` treats "POLLHUP after a partial read" as EOF (a PTY read never
 * fills libuv's 64 KiB buffer, so every read is partial) even though the kernel still holds up to
 * ~70 KB of output in the PTY buffers. The stream emits 'end', Node auto-destroys it and closes
 * the master fd: the rest is gone. (A read that returns EIO is a real end: Linux's n_tty only
 * returns EIO once the buffers are empty.)
 *
 * The fix: just before the master fd can be closed (on 'end' and in `destroy`, which node-pty
 * also calls 200 ms after exit), read the master synchronously until EIO (everything read) or
 * EAGAIN (another process still holds the slave). The fd is non-blocking, so this never blocks.
 * Proven by the 30 × 1 MB `cat` test in sidecar/terminals.
 */
import { readFileSync, readSync, writeSync } from 'node:fs'
import * as pty from 'node-pty'

export interface PtySpawnOptions {
  file: string
  args: string[]
  cwd: string
  env: Record<string, string>
  cols: number
  rows: number
}

export interface PtyExit {
  exitCode: number | null
  signal: number | null
}

interface NodePtyInternals {
  _socket: import('node:net').Socket
  _fd: number
}

const DRAIN_CHUNK_BYTES = 64 * 1024
/** How soon input the PTY had no room for is offered again (the program reads its input slowly),
 * doubling up to INPUT_RETRY_MAX_MS while it keeps not reading. */
const INPUT_RETRY_MS = 1
const INPUT_RETRY_MAX_MS = 32

export class PtyProcess {
  readonly pid: number
  /** The index N of the slave /dev/pts/N, as the kernel reports it for the master descriptor
   * (Linux names it in the descriptor's fdinfo); undefined where it cannot be proven. */
  readonly ttyIndex: number | undefined
  readonly #pty: pty.IPty
  readonly #socket: import('node:net').Socket
  readonly #fd: number
  #onData: (bytes: Buffer) => void = () => {}
  #onEnd: () => void = () => {}
  #onExit: (exit: PtyExit) => void = () => {}
  #ended = false
  /** Input the master has not taken yet (its buffer was full), oldest first. */
  #unwritten: Buffer[] = []
  #unwrittenBytes = 0
  #reportedBacklog = 0
  #onBacklog: (bytes: number) => void = () => {}
  #retryMs = INPUT_RETRY_MS

  constructor(options: PtySpawnOptions) {
    this.#pty = pty.spawn(options.file, options.args, {
      name: options.env.TERM ?? 'xterm-256color',
      cwd: options.cwd,
      env: options.env,
      cols: options.cols,
      rows: options.rows,
      encoding: null,
    })
    const internals = this.#pty as unknown as Partial<NodePtyInternals>
    if (!internals._socket || typeof internals._fd !== 'number') {
      throw new Error('node-pty internals changed (_socket/_fd): the tail-loss fix needs review')
    }
    this.pid = this.#pty.pid
    this.#socket = internals._socket
    this.#fd = internals._fd
    this.ttyIndex = masterTtyIndex(this.#fd)
    this.#socket.on('data', (chunk: Buffer) => this.#onData(chunk))
    // node-pty rethrows stream errors when it is the only listener; its own handler still closes.
    this.#socket.on('error', () => {})
    // Registered before Node's own 'end' handling destroys the stream.
    this.#socket.prependListener('end', () => this.#drainSync())
    const destroy = this.#socket.destroy.bind(this.#socket)
    this.#socket.destroy = (error?: Error) => {
      this.#drainSync() // a no-op once destroyed: node-pty destroys again 200 ms after exit
      return destroy(error)
    }
    this.#socket.once('close', () => this.#end())
    this.#pty.onExit(({ exitCode, signal }) => {
      this.#end()
      this.#onExit({ exitCode: signal ? null : exitCode, signal: signal || null })
    })
  }

  /** Every byte read from the master, in order (a Buffer the callee may keep). */
  onData(listener: (bytes: Buffer) => void): void {
    this.#onData = listener
  }

  /** The byte source closed: no data follows. Fires before onExit. */
  onEnd(listener: () => void): void {
    this.#onEnd = listener
  }

  onExit(listener: (exit: PtyExit) => void): void {
    this.#onExit = listener
  }

  /**
   * Writes input to the master now, on this thread. node-pty's own write goes through fs.write,
   * i.e. a thread-pool round trip per keystroke (a wake-up of another thread on the echo's path);
   * the fd is non-blocking, so a synchronous write never blocks: what the kernel does not take
   * (EAGAIN, a short write) waits here, in order, and is retried shortly.
   */
  write(bytes: Uint8Array): void {
    if (bytes.length === 0) return
    this.#unwritten.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    this.#unwrittenBytes += bytes.length
    if (this.#unwritten.length === 1) this.#writeUnwritten()
    this.#reportBacklog()
  }

  /** Input bytes waiting for the program: reported whenever the count changes while any wait, and
   * once more when the last is written (normally nothing waits and nothing is reported). */
  onBacklog(listener: (bytes: number) => void): void {
    this.#onBacklog = listener
  }

  #reportBacklog(): void {
    if (this.#unwrittenBytes === this.#reportedBacklog) return
    this.#reportedBacklog = this.#unwrittenBytes
    this.#onBacklog(this.#unwrittenBytes)
  }

  #writeUnwritten(): void {
    while (this.#unwritten.length > 0) {
      // A closed fd's number may already belong to another file: never write to it.
      if (this.#socket.destroyed) {
        this.#dropUnwritten()
        return
      }
      const head = this.#unwritten[0]!
      let written = 0
      try {
        written = writeSync(this.#fd, head)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') {
          this.#dropUnwritten() // EIO: the child side is gone; its input is moot
          return
        }
      }
      if (written === 0) {
        // No room (EAGAIN): offer it again soon, less often while the program keeps not reading.
        setTimeout(() => {
          this.#writeUnwritten()
          this.#reportBacklog()
        }, this.#retryMs)
        this.#retryMs = Math.min(this.#retryMs * 2, INPUT_RETRY_MAX_MS)
        return
      }
      this.#retryMs = INPUT_RETRY_MS
      this.#unwrittenBytes -= written
      if (written < head.length) this.#unwritten[0] = head.subarray(written)
      else this.#unwritten.shift()
    }
  }

  #dropUnwritten(): void {
    this.#unwritten = []
    this.#unwrittenBytes = 0
  }

  resize(cols: number, rows: number): void {
    this.#pty.resize(cols, rows)
  }

  /** Stops reading the master: the program blocks once the PTY's buffer is full. */
  pause(): void {
    this.#socket.pause()
  }

  resume(): void {
    this.#socket.resume()
  }

  /** Closes the master after reading whatever the kernel still holds (used when a close cannot
   * wait for EOF any longer, e.g. a process outside the session keeps the slave open). */
  forceClose(): void {
    if (this.#ended) return
    this.#socket.destroy()
  }

  #drainSync(): void {
    // Once the stream is destroyed the fd is closed, and its number may already belong to a file
    // another thread opened: reading it would journal that file. Never touch it then.
    if (this.#ended || this.#socket.destroyed) return
    const buffer = Buffer.allocUnsafe(DRAIN_CHUNK_BYTES)
    for (;;) {
      let n: number
      try {
        n = readSync(this.#fd, buffer, 0, buffer.length, null)
      } catch {
        return // EIO: all read; EAGAIN: nothing buffered now; EBADF: already closed
      }
      if (n <= 0) return
      this.#onData(Buffer.from(buffer.subarray(0, n)))
    }
  }

  #end(): void {
    if (this.#ended) return
    this.#drainSync()
    this.#ended = true
    this.#onEnd()
  }
}

/** The pts index the kernel gives the master `fd` (`tty-index:` in /proc/self/fdinfo). Read from
 * the descriptor itself, not from node-pty's name for the slave, so it proves which PTY it is. */
function masterTtyIndex(fd: number): number | undefined {
  try {
    const match = /^tty-index:\s*(\d+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'))
    return match ? Number(match[1]) : undefined
  } catch {
    return undefined
  }
}
