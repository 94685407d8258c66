/**
 * The Node API's way to open a sidecar stream (a GET that accepts `text/event-stream`): one plain
 * TCP connection per stream, asked in HTTP/1.0 so the sidecar answers with the body delimited by
 * the connection's close rather than chunked, and read into one large buffer shared by every
 * stream.
 *
 * Why not node:http (./node-transport.ts, every other call): a relayed stream is a pass-through,
 * and there node:http read the socket 64 KiB at a time, parsed the chunked framing in llhttp and
 * pushed each piece through a readable stream; the relay's CPU per 100 MiB was about the reading
 * client's own. Read 1 MiB at a time straight into a reused buffer, with nothing to unframe, the
 * same bytes cost well under half (docs/benchmarks.md, "The relay"). A stream holds its
 * connection for its whole life anyway, so losing keep-alive for it costs one connect per stream.
 *
 * The head is parsed here (status line and headers: what a response to our own request to our own
 * sidecar carries). A route that names the chunked coding itself gets it even in HTTP/1.0; such a
 * body is decoded here (node-dechunk.ts), and its end is its last chunk. Otherwise the body ends where
 * the connection closes, so a break-off reads as the end: a relay ends its client's stream
 * either way (sse.ts), and an event stream has no length to fall short of.
 */
import { EventEmitter } from 'node:events'
import { connect, type Socket } from 'node:net'
import { Dechunker } from './node-dechunk.ts'
import { copyToSlab, type Piece } from './node-slabs.ts'

/**
 * Bytes one socket read may take. A relay behind a fast sidecar finds its socket full, and each
 * read costs about the same whatever its size (a system call and a callback): 64 KiB reads cost
 * ~2× the CPU per byte of 1 MiB reads here. One buffer for every stream: each read is copied out
 * in its own callback, before any other socket is read.
 */
export const STREAM_READ_BYTES = 1024 * 1024
const readBuffer = Buffer.allocUnsafe(STREAM_READ_BYTES)

/** A response head larger than this is not a sidecar's: the stream is refused. */
const MAX_HEAD_BYTES = 64 * 1024

const HEAD_END = Buffer.from('\r\n\r\n')

/**
 * A stream's body as it comes off the socket, for one reader: `data` (a Buffer, and for a body
 * read as it came the release of its room in a slab (node-slabs.ts): a reader that calls it must
 * not touch the bytes afterwards, one that never does may keep them), `end` (the sidecar closed
 * it: the body is complete), `close` (gone, after `end` or without it). It starts paused;
 * `resume` starts it. Shaped like the IncomingMessage subset the relay uses (node-relay.ts), so
 * either can be handed over.
 */
export class StreamBody extends EventEmitter {
  readonly #socket: Socket
  #early: Piece[] = []
  readonly #chunked: Dechunker | undefined
  #paused = true
  #ended = false
  #endSent = false
  #closed = false

  constructor(socket: Socket, early: Buffer, chunked: boolean) {
    super()
    this.#socket = socket
    this.#chunked = chunked ? new Dechunker() : undefined
    if (early.length > 0) this.received(early)
    socket.once('end', () => {
      // A chunked body that stopped before its last chunk broke off: it closes without an end.
      this.#ended = !this.#chunked || this.#chunked.done
      this.#flush()
    })
    socket.once('close', () => this.#flush())
  }

  /** Closed, with everything it carried delivered. */
  get destroyed(): boolean {
    return this.#closed
  }

  /** Bytes read off the socket (a view into the shared buffer: copied before anything else runs). */
  received(view: Buffer): void {
    let piece: Piece
    try {
      piece = this.#chunked ? { bytes: Buffer.concat(this.#chunked.push(view)), release: () => {} } : copyToSlab(view)
    } catch (error) {
      return void this.#socket.destroy(error as Error)
    }
    if (piece.bytes.length > 0 && this.#paused) this.#early.push(piece)
    else if (piece.bytes.length > 0) this.emit('data', piece.bytes, piece.release)
    else piece.release()
    // The last chunk read: the body is complete whether or not the sidecar closes at once.
    if (this.#chunked?.done && !this.#ended) {
      this.#ended = true
      this.#socket.destroy()
    }
  }

  pause(): this {
    this.#paused = true
    this.#socket.pause()
    return this
  }

  resume(): this {
    this.#paused = false
    this.#flush()
    if (!this.#paused) this.#socket.resume()
    return this
  }

  destroy(error?: Error): this {
    this.#socket.destroy(error)
    return this
  }

  /** What arrived while paused goes first; then the end and the close, once, in order. */
  #flush(): void {
    while (!this.#paused && this.#early.length > 0) {
      const { bytes, release } = this.#early.shift()!
      this.emit('data', bytes, release)
    }
    if (this.#paused || this.#early.length > 0) return
    if (this.#ended && !this.#endSent) {
      this.#endSent = true
      this.emit('end')
    }
    if (this.#socket.destroyed && !this.#closed) {
      this.#closed = true
      this.emit('close')
    }
  }
}

export interface StreamHead {
  status: number
  statusText: string
  headers: Headers
  body: StreamBody
}

/** Pure: a response head (without its blank line) as status and headers; undefined if malformed. */
export function parseHead(text: string): { status: number; statusText: string; headers: Headers } | undefined {
  const lines = text.split('\r\n')
  const status = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0] ?? '')
  if (!status) return undefined
  const headers = new Headers()
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    if (colon <= 0) return undefined
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  return { status: Number(status[1]), statusText: status[2] ?? '', headers }
}

/** Opens `url` with a GET carrying `headers`; resolves at the response head. */
export function openStream(url: URL, headers: Headers, signal: AbortSignal | undefined): Promise<StreamHead> {
  return new Promise((resolve, reject) => {
    if (url.protocol !== 'http:') return reject(new TypeError(`the sidecar stream transport speaks http:, not ${url.protocol}`))
    let head: Buffer[] = []
    let headBytes = 0
    let body: StreamBody | undefined
    const fail = (error: Error) => {
      socket.destroy()
      reject(error)
    }
    const onHead = (chunk: Buffer) => {
      head.push(chunk)
      headBytes += chunk.length
      const all = head.length === 1 ? chunk : Buffer.concat(head)
      const end = all.indexOf(HEAD_END)
      if (end === -1) {
        head = [all]
        if (headBytes > MAX_HEAD_BYTES) fail(new Error('the sidecar answered a response head too large'))
        return
      }
      const parsed = parseHead(all.subarray(0, end).toString('latin1'))
      if (!parsed) return fail(new Error('the sidecar answered a malformed response head'))
      const coding = parsed.headers.get('transfer-encoding')
      if (coding !== null && coding.toLowerCase() !== 'chunked')
        return fail(new TypeError(`the sidecar answered a transfer coding ${coding}`))
      socket.pause()
      body = new StreamBody(socket, all.subarray(end + HEAD_END.length), coding !== null)
      signal?.removeEventListener('abort', onAbort)
      signal?.addEventListener('abort', () => socket.destroy(signal.reason), { once: true })
      resolve({ ...parsed, body })
    }
    const socket = connect({
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port || 80),
      onread: {
        buffer: readBuffer,
        callback: (n: number, buffer: Uint8Array) => {
          const view = (buffer as Buffer).subarray(0, n)
          if (body) body.received(view)
          else onHead(Buffer.from(view))
          return true
        },
      },
    })
    const onAbort = () => fail(signal!.reason)
    if (signal?.aborted) return fail(signal.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    socket.setNoDelay(true)
    socket.once('error', (error) => {
      if (!body) reject(signal?.aborted ? signal.reason : error)
    })
    socket.once('close', () => {
      if (!body) reject(new Error('the sidecar closed the connection before answering'))
    })
    const lines = [`GET ${url.pathname}${url.search} HTTP/1.0`, `host: ${url.host}`]
    headers.forEach((value, name) => lines.push(`${name}: ${value}`))
    socket.write(`${lines.join('\r\n')}\r\n\r\n`)
  })
}
