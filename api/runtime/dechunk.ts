/**
 * HTTP/1.1 chunked transfer coding, decoded incrementally (RFC 9112 §7.1): the sidecar frames a
 * stream this way even for an HTTP/1.0 request when its route names the coding itself (Hono's
 * streamSSE does). Written here rather than taken from a library because node:http's parser
 * (llhttp) cannot be fed bytes from outside it, and the decoding is this small: payload comes out
 * as views of the bytes given, never copied.
 */

/** A chunk-size line longer than this (hex digits and extensions) is not a sidecar's. */
const MAX_SIZE_LINE = 1024

export class Dechunker {
  /** Payload bytes left in the current chunk; -1 while reading a size line. */
  #left = -1
  /** CR LF bytes still to skip after a chunk's payload. */
  #crlf = 0
  #line = ''
  #trailer = false
  #done = false

  /** The last chunk and its trailer were read: the body is complete. */
  get done(): boolean {
    return this.#done
  }

  /** The payload in `bytes`, as views of it; throws on a malformed framing. */
  push(bytes: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = []
    let i = 0
    while (i < bytes.length && !this.#done) {
      if (this.#crlf > 0) {
        i++
        this.#crlf--
      } else if (this.#left > 0) {
        const n = Math.min(this.#left, bytes.length - i)
        out.push(bytes.subarray(i, i + n))
        i += n
        this.#left -= n
        if (this.#left === 0) {
          this.#left = -1
          this.#crlf = 2
        }
      } else {
        const nl = bytes.indexOf(10, i)
        const end = nl === -1 ? bytes.length : nl
        this.#line += Buffer.from(bytes.buffer, bytes.byteOffset + i, end - i).toString('latin1')
        if (this.#line.length > MAX_SIZE_LINE) throw new Error('chunked body: a size line too long')
        i = end
        if (nl === -1) break
        i++
        this.#lineEnded(this.#line.replace(/\r$/, ''))
        this.#line = ''
      }
    }
    return out
  }

  #lineEnded(line: string): void {
    if (this.#trailer) {
      if (line === '') this.#done = true
      return
    }
    const size = /^([0-9a-fA-F]{1,8})(?:;.*)?$/.exec(line.trim())
    if (!size) throw new Error(`chunked body: a malformed size line ${JSON.stringify(line.slice(0, 40))}`)
    const n = Number.parseInt(size[1]!, 16)
    if (n === 0) this.#trailer = true
    else this.#left = n
  }
}
