/**
 * Fast-forward for the emulator feed. When a terminal prints far more than the history
 * allowance holds (a 200 MB `cat`), most of that text provably scrolls out of the emulator before
 * anyone could see it; parsing it is the emulator's whole cost. This planner rewrites a window of
 * journal records so the emulator skips such text, keeping every state it could leave behind.
 *
 * The proof, for a skipped range [S, P) of one "stretch" (bytes the parser reads in its ground
 * state as plain text, CR, LF, TAB, BS, BEL and SGR sequences only, on the normal screen with a
 * full-screen scroll region):
 *   - P ends a CR LF, so the real cursor is at column 0 there; the replacement ends with CR.
 *   - After P the same stretch has ≥ K = history + 2·rows + 2 more LFs. Each LF moves the cursor
 *     down or scrolls one line into history; after `rows` of them the cursor sits on the bottom
 *     row in both versions, and the rest scroll every line that existed at P out of the allowance.
 *     So the buffer, the cursor and the wrap state after the stretch do not depend on [S, P).
 *   - SGR sequences in [S, P) change the current attributes; they are kept, in order, as the
 *     replacement (with the CR) — from the last one that begins with a reset (its first parameter
 *     0 or empty): xterm's SGR 0 sets every attribute an SGR can set (colours, flags, underline
 *     style and colour), so nothing before it shows afterwards. A coloured flood resets on every
 *     line, so its replacement is a few sequences, not a third of the bytes. Nothing else in a
 *     stretch changes state.
 * Anything the planner does not understand ends a stretch, so it only ever skips less.
 *
 * Streaming: a flood arrives in windows (≤ 1 MiB each, so the feed's memory stays flat) but the
 * proof needs K ≈ 6,700 lines after a skip point, which a window of short lines barely holds. So a
 * window that is not at the journal's live edge (`plan(records, false)`) does not end its open
 * stretch: it skips what is already provable and holds the rest (≤ EMULATOR_FAST_FORWARD_HOLD_BYTES)
 * for the next window. Holding is safe because every skip point is chosen with ≥ K LFs after it in
 * bytes that are either held or already written, and writing held bytes is never wrong, only
 * slower: `release()` hands them over before anyone looks at the screen (a request) and the live
 * edge, a resize or a full hold writes them out.
 */
import { HISTORY_CELLS } from '../../schema/limits.ts'
import { EMULATOR_FAST_FORWARD_HOLD_BYTES } from '../tuning.ts'
import { historyRowsFor } from './allowance.ts'
import { CrLfEnds } from './crlf-ends.ts'

export type FeedRecord =
  | { kind: 'data'; sequence: number; bytes: Uint8Array }
  | { kind: 'resize'; sequence: number; cols: number; rows: number }

enum S {
  Ground,
  Esc,
  EscInter,
  Csi,
  Str,
  StrEsc,
}

const CR = 0x0d
const LF = 0x0a
const ESC = 0x1b

/** Global byte position in a window: record index and offset. */
interface Stretch {
  start: number
  /** Ends of CR LF pairs (position after the LF) and the LF count up to each; the planner's one
   * store, reset for each stretch (only one is open at a time). */
  crlf: CrLfEnds
  /** LFs since the stretch began (the base of the counts; not reset when `start` moves). */
  lfs: number
  /** Where the stretch's last SGR sequence begins (-1: none yet). Every ESC in a stretch begins an
   * SGR (or is a lone ESC before one), so the SGRs a skip replays are found by looking back from its
   * end (`sgrReplay`) instead of being listed as they are read: listing them was most of the cost
   * of planning a coloured flood (~7 ms per MiB against ~1.5 for plain text). */
  lastSgr: number
}

export class FastForward {
  #cols: number
  #rows: number
  readonly #historyCells: number
  #state = S.Ground
  #csiSimple = true
  #csiParams = ''
  #csiStart = 0
  #c2 = false
  #prev = 0
  #alt = false
  #regionFull = true
  /** Bytes skipped so far (observability, benchmarks). */
  skipped = 0
  /** Global position (bytes seen so far, all windows) of the next byte. */
  #pos = 0
  /** The open stretch carried over from the previous window, and its held bytes: the records (or
   * record tails) from `#stretch.start` to `#pos`, not yet written, with their global offsets. */
  #stretch: Stretch | undefined
  #held: FeedRecord[] = []
  #heldOffsets: number[] = []
  readonly #crlf = new CrLfEnds()

  constructor(geometry: { cols: number; rows: number }, historyCells = HISTORY_CELLS) {
    this.#cols = geometry.cols
    this.#rows = geometry.rows
    this.#historyCells = historyCells
  }

  /** A screen restored from a revision: what the planner would have tracked up to there (it
   * starts in the ground state, at a record boundary). */
  resume(state: { alt: boolean; regionFull: boolean }): void {
    this.#alt = state.alt
    this.#regionFull = state.regionFull
  }

  /** A stretch opening at `start`; the one before it was closed (its skips taken). */
  #newStretch(start: number, lfs = 0): Stretch {
    this.#crlf.reset()
    return { start, crlf: this.#crlf, lfs, lastSgr: -1 }
  }

  get #k(): number {
    return historyRowsFor(this.#cols, this.#historyCells) + 2 * this.#rows + 2
  }

  /**
   * Rewrites one window of records (every record exactly once, in order). At the live `edge` (the
   * default) everything comes out; otherwise the tail of an open stretch may be held back for the
   * next window (see the module comment).
   */
  plan(records: FeedRecord[], edge = true): FeedRecord[] {
    // Positions are global over all windows: offsets[i] is where record i's bytes start. Held
    // records from the previous window come first.
    const all = [...this.#held, ...records]
    const offsets = [...this.#heldOffsets]
    for (const r of records) {
      offsets.push(this.#pos)
      if (r.kind === 'data') this.#pos += r.bytes.length
    }
    const firstNew = this.#held.length
    this.#held = []
    this.#heldOffsets = []
    const skips: Array<{ from: number; to: number; replacement: number[] }> = []
    let stretch: Stretch | undefined = this.#stretch
    const end = (at: number) => {
      if (stretch) this.#close(stretch, at, all, offsets, skips)
      stretch = undefined
    }
    const eligible = () => this.#state === S.Ground && !this.#alt && this.#regionFull && !this.#c2
    for (let index = firstNew; index < all.length; index++) {
      const record = all[index]
      if (record.kind === 'resize') {
        end(offsets[index])
        this.#cols = record.cols
        this.#rows = record.rows
        continue
      }
      const bytes = record.bytes
      const base = offsets[index]
      const words = wordsOf(bytes)
      for (let i = 0; i < bytes.length; i++) {
        if (stretch && this.#state === S.Ground && !this.#c2) {
          // Hot path: inside an open stretch, plain text changes nothing but the LF bookkeeping.
          const next = plainRun(bytes, words, i, base, this.#prev, stretch)
          if (next > i) {
            this.#prev = bytes[next - 1]
            i = next - 1
            continue
          }
        }
        const at = base + i
        const b = bytes[i]
        if (this.#state === S.Ground && !this.#c2) {
          if (b >= 0x20 && b < 0x7f) {
            if (!stretch && eligible()) stretch = this.#newStretch(at)
            // Hot path: the rest of a run of printable ASCII changes nothing the planner tracks.
            while (i + 1 < bytes.length && bytes[i + 1] >= 0x20 && bytes[i + 1] < 0x7f) i++
            this.#prev = bytes[i]
            continue
          } else if (b === LF) {
            if (stretch) {
              stretch.lfs++
              if (this.#prev === CR) stretch.crlf.push(at + 1, stretch.lfs)
            } else if (eligible()) stretch = this.#newStretch(at, 1)
          } else if (b === CR || b === 0x09 || b === 0x08 || b === 0x07) {
            if (!stretch && eligible()) stretch = this.#newStretch(at)
          } else if (b === ESC) {
            this.#state = S.Esc
            this.#csiStart = at
          } else if (b === 0xc2) {
            this.#c2 = true
          } else if (b >= 0x80) {
            if (!stretch && eligible()) stretch = this.#newStretch(at)
          } else {
            end(at) // another C0 control (or DEL): not plain text
          }
          this.#prev = b
          continue
        }
        if (this.#c2) {
          this.#c2 = false
          if (b >= 0x80 && b <= 0x9f) {
            end(at - 1)
            this.#c1(b)
            this.#prev = b
            continue
          }
          if (this.#state === S.Ground) {
            if (!stretch && eligible()) stretch = this.#newStretch(at - 1)
            this.#prev = b
            continue
          }
        }
        this.#step(b, at, stretch, end)
        this.#prev = b
      }
    }
    let holdFrom = this.#pos
    if (stretch && !edge) {
      this.#advance(stretch, all, offsets, skips)
      if (this.#pos - stretch.start <= EMULATOR_FAST_FORWARD_HOLD_BYTES) holdFrom = stretch.start
      else stretch = undefined // too long to hold: write it; a new stretch starts after it
    } else end(this.#pos)
    this.#stretch = stretch
    if (!stretch) this.#crlf.release()
    const out = holdFrom < this.#pos ? this.#hold(all, offsets, holdFrom) : all
    return skips.length === 0 ? out : this.#rewrite(out, offsets, skips)
  }

  /** The held bytes, to be written now (before anyone looks at the screen); later skips start
   * after them. */
  release(): FeedRecord[] {
    const held = this.#held
    this.#held = []
    this.#heldOffsets = []
    this.#stretch = undefined
    this.#crlf.release()
    return held
  }

  /** Moves the records' bytes from `from` on into the hold; returns the records before it (their
   * offsets stay valid: the list is cut, not renumbered). */
  #hold(all: FeedRecord[], offsets: number[], from: number): FeedRecord[] {
    const out: FeedRecord[] = []
    all.forEach((record, index) => {
      const at = offsets[index]
      if (record.kind === 'resize' || at + record.bytes.length <= from) {
        out.push(record)
        return
      }
      const cut = Math.max(0, from - at)
      if (cut > 0) out.push({ kind: 'data', sequence: record.sequence, bytes: record.bytes.subarray(0, cut) })
      this.#held.push(cut > 0 ? { kind: 'data', sequence: record.sequence, bytes: record.bytes.subarray(cut) } : record)
      this.#heldOffsets.push(at + cut)
    })
    return out
  }

  /** The parser outside plain ground text. */
  #step(b: number, at: number, stretch: Stretch | undefined, end: (at: number) => void): void {
    if (b === 0x18 || b === 0x1a) {
      end(at)
      this.#state = S.Ground
      return
    }
    switch (this.#state) {
      case S.Esc:
        if (b === 0x5b) {
          this.#state = S.Csi
          this.#csiSimple = true
          this.#csiParams = ''
        } else if (b === 0x5d || b === 0x50 || b === 0x58 || b === 0x5e || b === 0x5f) {
          end(this.#csiStart)
          this.#state = S.Str
        } else if (b >= 0x20 && b <= 0x2f) {
          end(this.#csiStart)
          this.#state = S.EscInter
        } else if (b >= 0x30 && b <= 0x7e) {
          end(this.#csiStart)
          if (b === 0x63) this.#reset() // RIS
          this.#state = S.Ground
        } else if (b !== ESC) end(this.#csiStart) // C0 executes inside; stay
        return
      case S.EscInter:
        if (b >= 0x30 && b <= 0x7e) this.#state = S.Ground
        else if (b === ESC) this.#state = S.Esc
        return
      case S.Csi:
        if (b >= 0x40 && b <= 0x7e) {
          this.#state = S.Ground
          if (this.#csiSimple && b === 0x6d && /^[0-9;:]*$/.test(this.#csiParams)) {
            if (stretch) stretch.lastSgr = this.#csiStart
          } else {
            end(this.#csiStart)
            this.#csi(String.fromCharCode(b))
          }
        } else if (b === ESC) {
          end(this.#csiStart)
          this.#state = S.Esc
          this.#csiStart = at
        } else {
          if (b < 0x20 || b >= 0x80) this.#csiSimple = false
          else this.#csiParams += String.fromCharCode(b)
        }
        return
      case S.Str:
        if (b === 0x07) this.#state = S.Ground
        else if (b === ESC) this.#state = S.StrEsc
        return
      case S.StrEsc:
        this.#state = b === 0x5c ? S.Ground : b === ESC ? S.StrEsc : S.Esc
        if (this.#state === S.Esc) {
          this.#csiStart = at - 1
          this.#step(b, at, undefined, end)
        }
        return
      default:
        return
    }
  }

  /** An 8-bit C1 control (UTF-8 C2 80–9F), as xterm reads it. */
  #c1(b: number): void {
    if (b === 0x9b) {
      this.#state = S.Csi
      this.#csiSimple = false
      this.#csiParams = ''
    } else if (b === 0x9d || b === 0x90 || b === 0x98 || b === 0x9e || b === 0x9f) this.#state = S.Str
    else this.#state = S.Ground
  }

  /** Tracks the state a stretch depends on: the alternate screen and the scroll region. */
  #csi(final: string): void {
    const params = this.#csiParams
    if ((final === 'h' || final === 'l') && params.startsWith('?')) {
      for (const p of params.slice(1).split(';')) if (p === '47' || p === '1047' || p === '1049') this.#alt = final === 'h'
    } else if (final === 'r' && !/[?<>=]/.test(params)) {
      const [top = '', bottom = ''] = params.split(';')
      const t = Number(top || 1)
      const b = Number(bottom || this.#rows)
      this.#regionFull = t <= 1 && (b >= this.#rows || b === 0)
    } else if (final === 'p' && params === '!') {
      this.#regionFull = true // DECSTR
    }
    if (!this.#csiSimple) this.#regionFull = this.#regionFull && final !== 'r'
  }

  #reset(): void {
    this.#alt = false
    this.#regionFull = true
  }

  /** Skips what an open stretch already proves and restarts it at the skip point. */
  #advance(
    stretch: Stretch,
    records: FeedRecord[],
    offsets: number[],
    skips: Array<{ from: number; to: number; replacement: number[] }>,
  ): void {
    const pick = this.#close(stretch, this.#pos, records, offsets, skips)
    if (pick < 0) return
    stretch.start = stretch.crlf.ends[pick]
    stretch.crlf.head = pick + 1
  }

  /** Ends a stretch at `end`: skips from its start to the last CR LF that still has ≥ K LFs after
   * it. Returns that CR LF's index in the stretch, or -1 if nothing can be skipped. */
  #close(
    stretch: Stretch,
    end: number,
    records: FeedRecord[],
    offsets: number[],
    skips: Array<{ from: number; to: number; replacement: number[] }>,
  ): number {
    const k = this.#k
    // The last CR LF (from `head`) that still has ≥ k LFs after it and ends by `end`: both lists
    // increase, so binary search for the last index meeting both.
    const maxCount = stretch.lfs - k
    const { ends, counts } = stretch.crlf
    let lo = stretch.crlf.head
    let hi = stretch.crlf.length - 1
    let pick = -1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      if (counts[mid] <= maxCount && ends[mid] <= end) {
        pick = mid
        lo = mid + 1
      } else hi = mid - 1
    }
    if (pick < 0) return -1
    const to = ends[pick]
    const replacement = stretch.lastSgr >= stretch.start ? sgrReplay(records, offsets, stretch.start, to) : []
    replacement.push(CR)
    skips.push({ from: stretch.start, to, replacement })
    this.skipped += to - stretch.start
    return pick
  }

  /** Applies skips: bytes in a skipped range are dropped; its replacement goes where it ends. */
  #rewrite(records: FeedRecord[], offsets: number[], skips: Array<{ from: number; to: number; replacement: number[] }>): FeedRecord[] {
    let s = 0
    return records.map((record, index) => {
      if (record.kind === 'resize') return record
      const base = offsets[index]
      const stop = base + record.bytes.length
      if (s >= skips.length || skips[s].from >= stop) return record
      const out: number[] = []
      let at = base
      while (at < stop) {
        const skip = skips[s]
        if (!skip || skip.from >= stop) {
          for (; at < stop; at++) out.push(record.bytes[at - base])
          break
        }
        for (; at < Math.max(skip.from, base) && at < stop; at++) out.push(record.bytes[at - base])
        const to = Math.min(skip.to, stop)
        at = Math.max(at, to)
        if (skip.to <= stop) {
          for (const byte of skip.replacement) out.push(byte)
          s++
        }
      }
      return { kind: 'data', sequence: record.sequence, bytes: Uint8Array.from(out) }
    })
  }
}

/**
 * The SGR sequences a skip of [from, to) replays, in order: those in the range from the last one
 * that begins with a reset (its first parameter 0 or empty). Inside a stretch every ESC begins
 * `ESC [ params m` or is a lone ESC before another ESC (which xterm.js ignores), so the range is read
 * backwards from `to` for ESCs (lastIndexOf: plain stretches between them cost native speed), and
 * a coloured flood, which resets on every line, finds its last reset a few bytes before `to`.
 */
function sgrReplay(records: FeedRecord[], offsets: number[], from: number, to: number): number[] {
  const found: number[][] = []
  for (let index = recordAt(records, offsets, to - 1); index >= 0 && offsets[index] + bytesOf(records[index]) > from; index--) {
    const record = records[index]
    if (record.kind !== 'data') continue
    const base = offsets[index]
    const lo = Math.max(from, base) - base
    for (let j = record.bytes.lastIndexOf(ESC, Math.min(to, base + record.bytes.length) - base - 1); j >= lo; ) {
      const sequence = sequenceAt(records, offsets, base + j)
      if (sequence) {
        found.push(sequence)
        if (isReset(sequence)) return found.reverse().flat()
      }
      j = j > 0 ? record.bytes.lastIndexOf(ESC, j - 1) : -1
    }
  }
  return found.reverse().flat()
}

const bytesOf = (record: FeedRecord) => (record.kind === 'data' ? record.bytes.length : 0)

/** The index of the last record starting at or before global position `at` (binary search). */
function lastStartingBy(offsets: number[], at: number): number {
  let lo = 0
  let hi = offsets.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (offsets[mid] <= at) lo = mid
    else hi = mid - 1
  }
  return lo
}

/** The index of the data record holding global position `at` (the last record starting at or before it). */
function recordAt(records: FeedRecord[], offsets: number[], at: number): number {
  let lo = lastStartingBy(offsets, at)
  while (lo > 0 && (records[lo].kind !== 'data' || offsets[lo] > at)) lo--
  return lo
}

/** The SGR sequence beginning at the ESC at `at` (undefined for a lone ESC before another ESC). */
function sequenceAt(records: FeedRecord[], offsets: number[], at: number): number[] | undefined {
  if (byteAt(records, offsets, at + 1) === ESC) return undefined
  const sequence = [ESC]
  for (let p = at + 1; ; p++) {
    const b = byteAt(records, offsets, p)
    sequence.push(b)
    if (b === 0x6d) return sequence
    if (p === at + 1 ? b !== 0x5b : (b < 0x30 || b > 0x39) && b !== SEMICOLON && b !== COLON) {
      throw new Error(`fast-forward: a stretch holds an ESC at ${at} that does not begin an SGR`)
    }
  }
}

/** Whether an `ESC [ params m` begins with a reset: its first parameter only zeros or empty. */
function isReset(sequence: number[]): boolean {
  let j = 2
  while (sequence[j] === 0x30) j++
  return sequence[j] === SEMICOLON || sequence[j] === COLON || sequence[j] === 0x6d
}

function byteAt(records: FeedRecord[], offsets: number[], at: number): number {
  for (let i = lastStartingBy(offsets, at); i >= 0; i--) {
    const r = records[i]
    if (r.kind === 'data' && at - offsets[i] < r.bytes.length && at >= offsets[i]) return r.bytes[at - offsets[i]]
  }
  throw new Error(`fast-forward: no byte at ${at}`)
}

const SEMICOLON = 0x3b
const COLON = 0x3a

/**
 * Pure: the end (exclusive) of a plain SGR sequence — ESC [ digits, semicolons and colons, m — that
 * starts at `at` and ends inside `bytes`, else -1 (anything else, or a sequence cut by the record's
 * end, goes through the planner's state machine). Coloured output is mostly these: read in one
 * tight loop they cost what plain text does, where the state machine cost ~25× as much per byte.
 */
export function sgrEnd(bytes: Uint8Array, at: number): number {
  if (bytes[at + 1] !== 0x5b) return -1
  for (let j = at + 2; j < bytes.length; j++) {
    const c = bytes[j]
    if (c === 0x6d) return j + 1
    if ((c < 0x30 || c > 0x39) && c !== SEMICOLON && c !== COLON) return -1
  }
  return -1
}

/** The 4-byte-aligned middle of `bytes` as words, for plainRun's word-at-a-time skip. */
interface Words {
  words: Uint32Array
  /** Index in `bytes` of words[0]. */
  start: number
}

/** Below this, a record is scanned byte by byte (a view would cost more than it saves). */
const WORD_SCAN_MIN_BYTES = 64

function wordsOf(bytes: Uint8Array): Words | undefined {
  if (bytes.length < WORD_SCAN_MIN_BYTES) return undefined
  const start = (4 - (bytes.byteOffset & 3)) & 3
  return { words: new Uint32Array(bytes.buffer, bytes.byteOffset + start, (bytes.length - start) >>> 2), start }
}

/**
 * Pure: does the word hold a byte outside printable ASCII (< 0x20 or > 0x7e)? The
 * two classic exact SWAR tests ("has less than", "has more than"; Anderson, Bit Twiddling Hacks):
 * a borrow or carry into a byte's top bit can only start at a byte that is out of range.
 */
export function hasNonPrintable(x: number): boolean {
  return ((((x - 0x20202020) & ~x) | ((x + 0x01010101) | x)) & 0x80808080) !== 0
}

/**
 * Pure over `bytes` from `from`: consumes what cannot end or change an open stretch in the ground
 * state (printable ASCII, bytes ≥ 0x80 other than C2, CR, TAB, BS, BEL, LF, whose count and CR LF
 * ends it records, and whole plain SGR sequences, whose start it notes) and returns the index of the
 * first byte it did not consume. `prev` is the
 * byte before `from` (from an earlier record when `from` is 0). Runs of printable ASCII are
 * skipped four bytes at a time: this loop is most of the emulator thread's work during a flood,
 * and byte by byte it cost ~3 ns per byte here.
 */
function plainRun(bytes: Uint8Array, words: Words | undefined, from: number, base: number, prev: number, stretch: Stretch): number {
  let lfs = stretch.lfs
  let i = from
  const n = bytes.length
  const ws = words?.words
  const wStart = words ? words.start : n
  const wCount = ws ? ws.length : 0
  for (; i < n; i++) {
    if (ws && i >= wStart && ((i - wStart) & 3) === 0) {
      let w = (i - wStart) >>> 2
      while (w < wCount && !hasNonPrintable(ws[w])) w++
      i = Math.max(i, wStart + w * 4)
      if (i >= n) break
    }
    const c = bytes[i]
    if (c >= 0x20) {
      if (c < 0x7f || (c >= 0x80 && c !== 0xc2)) continue
      break
    }
    if (c === LF) {
      lfs++
      if ((i > 0 ? bytes[i - 1] : prev) === CR) {
        stretch.crlf.push(base + i + 1, lfs)
      }
    } else if (c === ESC) {
      const end = sgrEnd(bytes, i)
      if (end < 0) break
      stretch.lastSgr = base + i
      i = end - 1
    } else if (c !== CR && c !== 0x09 && c !== 0x08 && c !== 0x07) break
  }
  stretch.lfs = lfs
  return i
}
