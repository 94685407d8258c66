/**
 * Command marks in a terminal's bytes (pure). `MarkScanner` is fed the journal's Data records in
 * order and reports each mark once its sequence is complete, however the bytes were split across
 * reads, with where it started and ended (sequence, offset in that record, offset in the whole
 * output). It recognises:
 *
 *   OSC 133 ; A|B|C|D[;exit] [;k=v…]      FinalTerm marks (prompt, input, output, end)
 *   OSC 633 ; A|B|C|D[;exit] | E;cmd;nonce | P;Cwd=path   VS Code's marks (E, P values escaped)
 *   OSC 7 ; file://host/path              the working directory
 *   CSI ? 2004 h|l                        bracketed paste on or off (how a command is best typed)
 *
 * A mark carries the nonce it holds (`tk=` for 133 and 633 P, the third field of 633 E), so the
 * tracker can tell termkeep's own marks from bytes any program could print. Only the ESC ] … BEL
 * and ESC ] … ESC \ forms are read (UTF-8 terminals do not use the 8-bit C1 controls).
 *
 * Written here rather than taken from a library: the VT parsers on npm (xterm.js's among them)
 * parse whole screens; this needs only OSC and one CSI, positions in a byte stream, and must
 * skip plain text at memchr speed (Buffer.indexOf) because it reads every byte a terminal prints.
 */

/** Longer OSC payloads are not marks (a 633 E of the longest command a run types, escaped, fits). */
const MAX_MARK_BYTES = 4 * 64 * 1024 + 256
/** A CSI longer than this is not the bracketed-paste mode switch. */
const MAX_CSI_BYTES = 32

const ESC = 0x1b
const BEL = 0x07

export interface Position {
  /** The Data record (journal sequence). */
  sequence: number
  /** Bytes into that record. */
  offset: number
  /** Bytes into the whole output (every Data record before it, summed). */
  abs: number
}

export type MarkKind = 'A' | 'B' | 'C' | 'D' | 'E' | 'cwd' | 'paste'

export interface Mark {
  kind: MarkKind
  /** The nonce the mark carried (undefined: none). */
  nonce?: string
  /** D: the exit code (null: none given). */
  exitCode?: number | null
  /** E: the command line, unescaped. */
  commandLine?: string
  /** cwd: the directory. */
  cwd?: string
  /** paste: bracketed paste turned on (true) or off. */
  on?: boolean
  /** From where its ESC is to just past its terminator. */
  start: Position
  end: Position
}

type State = 'ground' | 'esc' | 'osc' | 'osc-esc' | 'csi-start' | 'csi'

/** Bytes scanned in JavaScript for the next ESC before asking Buffer.indexOf (memchr). */
const NEAR_ESC_BYTES = 64

/**
 * The next ESC in `buffer` from `from`, or -1. Coloured output has an ESC every ~16 bytes, where a
 * call to indexOf per sequence cost more than the search (an SGR-coloured flood: ~5 ms per MiB on
 * the main thread, plain text 0.2): the bytes just ahead are looked at here first.
 */
function nextEsc(buffer: Buffer, from: number): number {
  const near = Math.min(buffer.length, from + NEAR_ESC_BYTES)
  for (let j = from; j < near; j++) if (buffer[j] === ESC) return j
  return near < buffer.length ? buffer.indexOf(ESC, near) : -1
}

export class MarkScanner {
  #state: State = 'ground'
  #abs = 0
  #start: Position = { sequence: 0, offset: 0, abs: 0 }
  /** Where the ESC that ended an OSC string is (it may be ST's first byte, or a new sequence's). */
  #oscEsc: Position = this.#start
  #parts: Uint8Array[] = []
  #length = 0
  #overflow = false
  /** The private CSI being read: its length, the parameter being read, and whether one of its
   * parameters was 2004 (bracketed paste). */
  #csiLength = 0
  #param = 0
  #paste = false

  /** The marks completed in `bytes` (the Data record `sequence`), in order. */
  feed(bytes: Uint8Array, sequence: number): Mark[] {
    const marks: Mark[] = []
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const base = this.#abs
    let i = 0
    const at = (offset: number): Position => ({ sequence, offset, abs: base + offset })
    while (i < buffer.length) {
      switch (this.#state) {
        case 'ground': {
          let next = nextEsc(buffer, i)
          // The common case, a CSI that is not private (colours, cursor moves), needs nothing more.
          while (next >= 0 && buffer[next + 1] === 0x5b && next + 2 < buffer.length && buffer[next + 2] !== 0x3f) {
            next = nextEsc(buffer, next + 3)
          }
          if (next < 0) {
            i = buffer.length
            break
          }
          this.#start = at(next)
          this.#state = 'esc'
          i = next + 1
          break
        }
        case 'esc': {
          const byte = buffer[i]!
          if (byte === 0x5d) {
            this.#state = 'osc'
            this.#parts = []
            this.#length = 0
            this.#overflow = false
            i++
          } else if (byte === 0x5b) {
            // Only a private CSI (`ESC [ ?`) can switch bracketed paste; any other holds no ESC
            // or BEL and is skipped as plain bytes (colour-heavy output is mostly CSI).
            this.#state = 'csi-start'
            i++
          } else if (byte === ESC) {
            this.#start = at(i)
            i++
          } else {
            this.#state = 'ground'
            i++
          }
          break
        }
        case 'osc': {
          const bel = buffer.indexOf(BEL, i)
          const esc = buffer.indexOf(ESC, i)
          const stop = bel < 0 ? esc : esc < 0 ? bel : Math.min(bel, esc)
          const until = stop < 0 ? buffer.length : stop
          this.#collect(buffer.subarray(i, until))
          if (stop < 0) {
            i = buffer.length
          } else if (stop === bel) {
            this.#dispatch(marks, at(stop + 1))
            this.#state = 'ground'
            i = stop + 1
          } else {
            this.#oscEsc = at(stop)
            this.#state = 'osc-esc'
            i = stop + 1
          }
          break
        }
        case 'osc-esc': {
          // ESC ends the string (ST is ESC \); any ESC sequence may follow it.
          const byte = buffer[i]!
          if (byte === 0x5c) {
            this.#dispatch(marks, at(i + 1))
            this.#state = 'ground'
            i++
          } else {
            // The byte is read again as the one after that ESC.
            this.#dispatch(marks, this.#oscEsc)
            this.#start = this.#oscEsc
            this.#state = 'esc'
          }
          break
        }
        case 'csi-start': {
          this.#state = buffer[i] === 0x3f ? 'csi' : 'ground'
          if (this.#state === 'csi') {
            this.#csiLength = 1
            this.#param = 0
            this.#paste = false
            i++
          }
          break
        }
        case 'csi': {
          // Parameters are read as numbers, no strings.
          const byte = buffer[i]!
          i++
          if (byte >= 0x40 && byte <= 0x7e) {
            if (this.#param === 2004) this.#paste = true
            if (this.#paste && (byte === 0x68 || byte === 0x6c)) {
              marks.push({ kind: 'paste', on: byte === 0x68, start: this.#start, end: at(i) })
            }
            this.#state = 'ground'
          } else if (++this.#csiLength > MAX_CSI_BYTES || byte < 0x20) {
            this.#state = 'ground'
          } else if (byte >= 0x30 && byte <= 0x39) {
            this.#param = this.#param * 10 + (byte - 0x30)
          } else if (byte === 0x3b) {
            if (this.#param === 2004) this.#paste = true
            this.#param = 0
          }
          break
        }
      }
    }
    this.#abs += buffer.length
    return marks
  }

  #collect(bytes: Uint8Array): void {
    if (this.#overflow || bytes.length === 0) return
    if (this.#length + bytes.length > MAX_MARK_BYTES) {
      this.#overflow = true
      this.#parts = []
      return
    }
    // Copied: the record's bytes may be a view the journal reuses.
    this.#parts.push(Uint8Array.prototype.slice.call(bytes))
    this.#length += bytes.length
  }

  #dispatch(marks: Mark[], end: Position): void {
    if (this.#overflow) return
    const payload = Buffer.concat(this.#parts, this.#length).toString('utf8')
    this.#parts = []
    const mark = parseMark(payload)
    if (mark) marks.push({ ...mark, start: this.#start, end })
  }
}

type Parsed = Omit<Mark, 'start' | 'end'>

/** Pure: an OSC payload (without ESC ] and the terminator) as a mark, or undefined. */
export function parseMark(payload: string): Parsed | undefined {
  const fields = payload.split(';')
  const [code, kind] = fields
  if (code === '7') return cwdFromUrl(payload.slice(2))
  if (code !== '133' && code !== '633') return undefined
  const params = new Map<string, string>()
  for (const field of fields.slice(2)) {
    const eq = field.indexOf('=')
    if (eq > 0) params.set(field.slice(0, eq), field.slice(eq + 1))
  }
  const nonce = params.get('tk')
  const withNonce = (mark: Parsed): Parsed => (nonce === undefined ? mark : { ...mark, nonce })
  switch (kind) {
    case 'A':
    case 'B':
    case 'C':
      return withNonce({ kind })
    case 'D': {
      const exit = fields[2]
      const exitCode = exit !== undefined && /^-?\d{1,10}$/.test(exit) ? Number(exit) : null
      return withNonce({ kind: 'D', exitCode })
    }
    case 'E':
      if (code !== '633' || fields[2] === undefined) return undefined
      return { kind: 'E', commandLine: unescapeValue(fields[2]), ...(fields[3] === undefined ? {} : { nonce: fields[3] }) }
    case 'P': {
      if (code !== '633' || !fields[2]?.startsWith('Cwd=')) return undefined
      return withNonce({ kind: 'cwd', cwd: unescapeValue(fields[2].slice(4)) })
    }
    default:
      return undefined
  }
}

/** Pure: VS Code's escaping undone (`\\` → `\`, `\xNN` → that byte), bytes decoded as UTF-8. */
export function unescapeValue(value: string): string {
  if (!value.includes('\\')) return value
  const bytes: number[] = []
  const raw = Buffer.from(value, 'utf8')
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i]!
    if (byte === 0x5c && raw[i + 1] === 0x5c) {
      bytes.push(0x5c)
      i++
    } else if (byte === 0x5c && raw[i + 1] === 0x78 && /^[0-9a-fA-F]{2}$/.test(raw.subarray(i + 2, i + 4).toString('latin1'))) {
      bytes.push(Number.parseInt(raw.subarray(i + 2, i + 4).toString('latin1'), 16))
      i += 3
    } else {
      bytes.push(byte)
    }
  }
  return Buffer.from(bytes).toString('utf8')
}

/** Pure: `file://host/path` as a cwd mark (the path percent-decoded), or undefined. */
function cwdFromUrl(url: string): Parsed | undefined {
  const match = /^file:\/\/[^/]*(\/.*)$/.exec(url)
  if (!match) return undefined
  try {
    return { kind: 'cwd', cwd: decodeURIComponent(match[1]!) }
  } catch {
    return undefined
  }
}
