/**
 * The journal's in-memory index (the sidecar's): per native record, where its bytes sit in the
 * spool and how long they are (Data) or its geometry (Resize), and when it arrived. Typed arrays
 * that double when full: 17 bytes per record, independent of how many bytes the records hold —
 * the same 17 bytes as an entry of the index file (format.ts). Sequence s lives at slot s - 1.
 *
 * Arrival times are whole milliseconds since the journal's start, kept modulo 2^32 (4 bytes, 49.7
 * days); `#epochs` lists the sequence at which each further 2^32 ms began, so a terminal that
 * lives for months still has exact times for one number per 49.7 days.
 */
import { DATA, ENTRY_BYTES, EPOCH_MS, readEntry, RESIZE, unpackGeometry } from './format.ts'

const INITIAL_CAPACITY = 1024

export class RecordIndex {
  #offsets = new Float64Array(INITIAL_CAPACITY) // file offsets stay exact up to 2^53
  #lengths = new Uint32Array(INITIAL_CAPACITY) // Data: byte length; Resize: cols << 16 | rows
  #kinds = new Uint8Array(INITIAL_CAPACITY)
  #times = new Uint32Array(INITIAL_CAPACITY) // arrival: ms since the start, modulo EPOCH_MS
  #epochs: number[] = []
  #count = 0

  /** The last sequence recorded (0 when empty). */
  get last(): number {
    return this.#count
  }

  /** `atMs`: arrival, milliseconds since the journal's start (never less than the last one's). */
  addData(offset: number, length: number, atMs: number): number {
    return this.#add(DATA, offset, length, atMs)
  }

  addResize(offset: number, cols: number, rows: number, atMs: number): number {
    return this.#add(RESIZE, offset, (cols << 16) | rows, atMs)
  }

  /** Adds `count` encoded entries (format.ts) from `entries`, in order. */
  addEntries(entries: Buffer, count: number): void {
    for (let i = 0; i < count; i++) {
      const entry = readEntry(entries, i * ENTRY_BYTES)
      this.#add(entry.kind, entry.offset, entry.length, entry.atMs)
    }
  }

  isData(sequence: number): boolean {
    return this.#kinds[sequence - 1] === DATA
  }

  offset(sequence: number): number {
    return this.#offsets[sequence - 1]
  }

  /** Raw byte length of a Data record (0 for a Resize). */
  length(sequence: number): number {
    return this.isData(sequence) ? this.#lengths[sequence - 1] : 0
  }

  geometry(sequence: number): { cols: number; rows: number } {
    return unpackGeometry(this.#lengths[sequence - 1])
  }

  /** When the record arrived: whole milliseconds since the journal's start. */
  time(sequence: number): number {
    let epoch = this.#epochs.length
    while (epoch > 0 && this.#epochs[epoch - 1] > sequence) epoch--
    return epoch * EPOCH_MS + this.#times[sequence - 1]
  }

  /** Bytes the index itself holds (for memory accounting in tests). */
  get byteSize(): number {
    return this.#offsets.byteLength + this.#lengths.byteLength + this.#kinds.byteLength + this.#times.byteLength + this.#epochs.length * 8
  }

  #add(kind: number, offset: number, length: number, atMs: number): number {
    if (this.#count === this.#kinds.length) this.#grow()
    const ms = Math.floor(atMs)
    while (ms >= (this.#epochs.length + 1) * EPOCH_MS) this.#epochs.push(this.#count + 1)
    this.#kinds[this.#count] = kind
    this.#offsets[this.#count] = offset
    this.#lengths[this.#count] = length
    this.#times[this.#count] = ms - this.#epochs.length * EPOCH_MS
    return ++this.#count
  }

  #grow(): void {
    const capacity = this.#kinds.length * 2
    this.#offsets = grown(this.#offsets, new Float64Array(capacity))
    this.#lengths = grown(this.#lengths, new Uint32Array(capacity))
    this.#kinds = grown(this.#kinds, new Uint8Array(capacity))
    this.#times = grown(this.#times, new Uint32Array(capacity))
  }
}

function grown<T extends Float64Array | Uint32Array | Uint8Array>(from: T, to: T): T {
  to.set(from)
  return to
}
