/**
 * The CR LF pairs of a fast-forward stretch (fast-forward.ts): where each ends and how many LFs the
 * stretch held up to it, in two typed arrays one planner keeps for its whole life. A stretch of a
 * flood is held over many windows and gains ~13,000 entries per MiB; as growing JavaScript arrays
 * (copied as they grew, spliced when consumed, and long-lived enough to be promoted) they were most
 * of what planning allocated, in isolates whose young generation is 1 MiB (sidecar/node-flags.ts).
 * Positions are Float64: exact past 4 GiB of output.
 */
/** Entries a planner starts with (4 KiB): a quiet terminal's screen should not pay for a flood's. */
const INITIAL_ENTRIES = 256
/** A store grown past this (a flood's stretch, ~0.5 MiB) is given back when its stretch ends. */
const KEEP_ENTRIES = 16_384

export class CrLfEnds {
  ends = new Float64Array(INITIAL_ENTRIES)
  counts = new Float64Array(INITIAL_ENTRIES)
  /** Entries before `head` were consumed by a skip. */
  head = 0
  length = 0

  /** Starts over for a new stretch (storage up to KEEP_ENTRIES is kept for it). */
  reset(): void {
    this.head = 0
    this.length = 0
    if (this.ends.length > KEEP_ENTRIES) this.#shrink()
  }

  /** No stretch is open (the screen is quiet, or its held text was written): a screen keeps only
   * the initial storage, not the ~256 KiB a 10,000-line stretch grew it to. */
  release(): void {
    this.head = 0
    this.length = 0
    if (this.ends.length > INITIAL_ENTRIES) this.#shrink()
  }

  #shrink(): void {
    this.ends = new Float64Array(INITIAL_ENTRIES)
    this.counts = new Float64Array(INITIAL_ENTRIES)
  }

  push(end: number, count: number): void {
    if (this.length === this.ends.length) this.#makeRoom()
    this.ends[this.length] = end
    this.counts[this.length] = count
    this.length++
  }

  /** Drops consumed entries when they are half of the storage, else doubles it. Indices move:
   * callers hold none across a push. */
  #makeRoom(): void {
    if (this.head * 2 >= this.length) {
      this.ends.copyWithin(0, this.head, this.length)
      this.counts.copyWithin(0, this.head, this.length)
      this.length -= this.head
      this.head = 0
      return
    }
    const ends = new Float64Array(this.ends.length * 2)
    const counts = new Float64Array(this.ends.length * 2)
    ends.set(this.ends.subarray(0, this.length))
    counts.set(this.counts.subarray(0, this.length))
    this.ends = ends
    this.counts = counts
  }
}
