/**
 * The journal's in-memory index: per native record, where its bytes sit in the spool and how long
 * they are (Data) or its geometry (Resize). Typed arrays that double when full: 13 bytes per record,
 * independent of how many bytes the records hold. Sequence s lives at slot s - 1.
 */
const DATA = 0
const RESIZE = 1
const INITIAL_CAPACITY = 1024

export class RecordIndex {
  #offsets = new Float64Array(INITIAL_CAPACITY) // file offsets stay exact up to 2^53
  #lengths = new Uint32Array(INITIAL_CAPACITY) // Data: byte length; Resize: cols << 16 | rows
  #kinds = new Uint8Array(INITIAL_CAPACITY)
  #count = 0

  /** The last sequence recorded (0 when empty). */
  get last(): number {
    return this.#count
  }

  addData(offset: number, length: number): number {
    return this.#add(DATA, offset, length)
  }

  addResize(offset: number, cols: number, rows: number): number {
    return this.#add(RESIZE, offset, (cols << 16) | rows)
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
    const packed = this.#lengths[sequence - 1]
    return { cols: packed >>> 16, rows: packed & 0xffff }
  }

  /** Bytes the index itself holds (for memory accounting in tests). */
  get byteSize(): number {
    return this.#offsets.byteLength + this.#lengths.byteLength + this.#kinds.byteLength
  }

  #add(kind: number, offset: number, length: number): number {
    if (this.#count === this.#kinds.length) this.#grow()
    this.#kinds[this.#count] = kind
    this.#offsets[this.#count] = offset
    this.#lengths[this.#count] = length
    return ++this.#count
  }

  #grow(): void {
    const capacity = this.#kinds.length * 2
    const offsets = new Float64Array(capacity)
    offsets.set(this.#offsets)
    const lengths = new Uint32Array(capacity)
    lengths.set(this.#lengths)
    const kinds = new Uint8Array(capacity)
    kinds.set(this.#kinds)
    this.#offsets = offsets
    this.#lengths = lengths
    this.#kinds = kinds
  }
}
