/**
 * The one definition of a text page, shared by the sidecar (workspace files, streamed from disk)
 * and the API (attachments and tool results, held in memory). Pure: bytes in, a page out.
 *
 * - Lines end at `\n`; a `\r` right before it belongs to the terminator (CRLF files read like LF
 *   files; `readBytes` gives the exact bytes). A final `\n` does not start an empty line.
 * - `offset` is 1-based; a page takes up to `limit` lines from there. An offset past the last line
 *   gives zero lines and `eof`.
 * - `text` is the lines joined by `\n` with no final terminator. If its UTF-8 size would exceed
 *   `maxBytes` the page is refused (`files/too-large`), never shortened.
 * - A page holding a NUL byte or invalid UTF-8 is `files/not-text`. Lines before the page are
 *   skipped unread, so one binary blob early in a file does not poison later pages.
 * - A skipped line longer than `maxSkippedLineBytes` is `files/too-large` (a file without newlines
 *   would otherwise be scanned to its end to find a line that is not there).
 */
import { TermkeepError } from '../schema/errors.ts'

export interface LinePage {
  text: string
  /** Lines in this page (0 when `offset` is past the last line). */
  lines: number
  offset: number
  /** True when no line follows this page. */
  eof: boolean
  /** Where the line after this page starts, counted in bytes consumed (for cursors). */
  nextByte: number
}

const LF = 0x0a
const CR = 0x0d
const SEPARATOR = Uint8Array.of(LF)

/**
 * Feed it the file's bytes in order with `push` until it returns false (the page is complete and
 * a following line was seen) or the input ends, then call `finish`.
 */
export class LinePager {
  readonly #offset: number
  readonly #limit: number
  readonly #maxBytes: number
  /** 1-based index of the line being scanned. */
  #line: number
  /** The current line has at least one byte (so it counts even without a terminator). */
  #started = false
  /** The current line has written nothing into the page yet (not even its separator). */
  #fresh = true
  /** The last byte written for the current line is a CR (it may be half of a CRLF). */
  #pendingCr = false
  #taken = 0
  /** The page's bytes so far (grown by doubling, at most maxBytes + 2). */
  #page = new Uint8Array(0)
  #pageBytes = 0
  #more = false
  #consumed: number
  #nextByte = -1
  readonly #maxSkippedLineBytes: number
  /** Where the line being scanned starts, in bytes consumed. */
  #lineStart: number

  /** `firstLine`/`startByte` let a trusted cursor resume mid-input (the bytes before are not fed). */
  constructor(offset: number, limit: number, maxBytes: number, firstLine = 1, startByte = 0, maxSkippedLineBytes = Infinity) {
    this.#offset = offset
    this.#limit = limit
    this.#maxBytes = maxBytes
    this.#line = firstLine
    this.#consumed = startByte
    this.#lineStart = startByte
    this.#maxSkippedLineBytes = maxSkippedLineBytes
  }

  /** Returns false once the page is complete and a further line is known to exist. */
  push(chunk: Uint8Array): boolean {
    let pos = 0
    while (pos < chunk.length) {
      if (this.#taken === this.#limit) {
        this.#more = true
        this.#nextByte = this.#consumed + pos
        this.#consumed += chunk.length
        return false
      }
      const newline = chunk.indexOf(LF, pos)
      const end = newline === -1 ? chunk.length : newline
      if (end > pos) this.#started = true
      if (this.#line >= this.#offset) this.#take(chunk.subarray(pos, end))
      else if (this.#consumed + end - this.#lineStart > this.#maxSkippedLineBytes) throw this.#skippedTooLong()
      if (newline === -1) {
        pos = chunk.length
      } else {
        this.#endLine(true)
        pos = newline + 1
        this.#lineStart = this.#consumed + pos
      }
    }
    this.#consumed += chunk.length
    return true
  }

  finish(): LinePage {
    if (this.#started) this.#endLine(false)
    const bytes = this.#page.subarray(0, this.#pageBytes)
    if (bytes.indexOf(0) !== -1) throw notText('the page contains a NUL byte')
    let text: string
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
    } catch {
      throw notText('the page is not valid UTF-8')
    }
    return {
      text,
      lines: this.#taken,
      offset: this.#offset,
      eof: !this.#more,
      nextByte: this.#more ? this.#nextByte : this.#consumed,
    }
  }

  #take(piece: Uint8Array): void {
    if (piece.length === 0) return
    this.#openLine()
    this.#append(piece)
    this.#pendingCr = piece[piece.length - 1] === CR
  }

  /** Writes the separator before the current line once, when it first contributes. */
  #openLine(): void {
    if (!this.#fresh) return
    this.#fresh = false
    if (this.#taken > 0) this.#append(SEPARATOR)
  }

  #append(piece: Uint8Array): void {
    const size = this.#pageBytes + piece.length
    // One byte of slack: a trailing CR may still turn out to be half of a CRLF terminator.
    if (size > this.#maxBytes + 1) throw tooLarge(this.#maxBytes, this.#taken)
    if (size > this.#page.length) {
      const grown = new Uint8Array(Math.min(Math.max(size, this.#page.length * 2, 64 * 1024), this.#maxBytes + 2))
      grown.set(this.#page.subarray(0, this.#pageBytes))
      this.#page = grown
    }
    this.#page.set(piece, this.#pageBytes)
    this.#pageBytes = size
  }

  #endLine(terminated: boolean): void {
    if (this.#line >= this.#offset) {
      this.#openLine() // an empty line still takes its separator
      if (terminated && this.#pendingCr) this.#dropLastByte()
      if (this.#pageBytes > this.#maxBytes) throw tooLarge(this.#maxBytes, this.#taken)
      this.#taken++
    }
    this.#line++
    this.#started = false
    this.#fresh = true
    this.#pendingCr = false
  }

  #dropLastByte(): void {
    this.#pageBytes--
  }

  #skippedTooLong(): TermkeepError {
    const limit = this.#maxSkippedLineBytes
    return new TermkeepError(
      'files/too-large',
      `line ${this.#line} is longer than ${limit} bytes (scanned from byte ${this.#lineStart} without finding its end), so line ${this.#offset} is out of reach; read the file with files/bytes (a byte window)`,
      { limit, line: this.#line, byte: this.#lineStart },
    )
  }
}

/** Pages a complete in-memory text (attachments, tool results). */
export function pageOfBytes(
  bytes: Uint8Array,
  offset: number,
  limit: number,
  maxBytes: number,
  resume?: { line: number; byte: number },
): LinePage {
  const pager = new LinePager(offset, limit, maxBytes, resume?.line ?? 1, resume?.byte ?? 0)
  pager.push(resume ? bytes.subarray(resume.byte) : bytes)
  return pager.finish()
}

function notText(message: string): TermkeepError {
  return new TermkeepError('files/not-text', message)
}

/** `fittingLines`: how many lines from `offset` do fit (0: the first line alone is too big). */
function tooLarge(limit: number, fittingLines: number): TermkeepError {
  const hint = fittingLines > 0 ? `ask for at most ${fittingLines} lines` : 'the first line alone is larger; read it with a byte window'
  return new TermkeepError('files/too-large', `the page is larger than ${limit} bytes; ${hint}`, { limit, fittingLines })
}
