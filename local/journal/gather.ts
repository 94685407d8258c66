/**
 * Gathering PTY reads into journal flushes. "One PTY read" is what libuv read from the master in
 * one event-loop turn (it calls read(2) up to 32 times per readiness event): reads are gathered and
 * flushed at the end of the turn (setImmediate). A flood of tiny writes (line-buffered `seq`) would
 * otherwise cost one record, one write(2) and one wake-up of every reader per line; clients cannot
 * observe read boundaries, and latency grows by one turn at most.
 *
 * During a flood the gathering window widens to FLOOD_BATCH_MS: a PTY hands over ~4 KiB per turn
 * (measured: 53 MB of `cat` = 12,700 turns of 4,192 bytes), and doing the whole delivery cycle
 * (spool write, index, wake-up, every reader's read + encode + socket write, the emulator's
 * postMessage) per 4 KiB cost the sidecar most of its throughput. A flood is "the previous flush
 * was at least FLOOD_MIN_BYTES and less than FLOOD_GAP_MS ago": an echo or a keystroke's output
 * after a pause still goes out at the end of its turn; only the continuation of a burst waits
 * (≤ FLOOD_BATCH_MS plus timer slack). At most FLUSH_BYTES are held.
 */

/** Bytes gathered before they are flushed early. */
const FLUSH_BYTES = 1024 * 1024
/** A flush of at least this many bytes less than FLOOD_GAP_MS ago marks a flood … */
const FLOOD_MIN_BYTES = 2048
const FLOOD_GAP_MS = 3
/** … and while it lasts, reads are gathered this long before they are flushed. 4 ms (VS Code's
 * terminal batches 5 ms) instead of 1 ms cut the sidecar's CPU per 100 MiB of `cat` from ~2.95 to
 * ~2.5 s here (fewer flushes, thread hand-overs and reader wake-ups); with the keeper, whose flush
 * also wakes the sidecar and its three readers (follow, emulator, command marks), 8 ms instead of
 * 4 took the keeper's CPU per 100 MiB from ~0.9–1.1 to ~0.7 s and the sidecar's from ~1.8–2.2 to
 * ~1.4–1.7 s (alternating runs, load 7–12). Still under a 60 Hz frame; with the reads in the PTY
 * thread, gathering longer never leaves the PTY unread. A keystroke's echo is not a flood. */
const FLOOD_BATCH_MS = 8

export class Gatherer {
  #pending: Uint8Array[] = []
  #pendingBytes = 0
  #soon: NodeJS.Immediate | undefined
  #later: NodeJS.Timeout | undefined
  /** When the last flush happened (performance.now()) and how many bytes it carried. */
  #lastAt = Number.NEGATIVE_INFINITY
  #lastBytes = 0

  /** `flushTo` receives the gathered reads in order (non-empty) and their total length. */
  constructor(private readonly flushTo: (parts: Uint8Array[], total: number) => void) {}

  add(bytes: Uint8Array): void {
    if (bytes.length === 0) return
    this.#pending.push(bytes)
    this.#pendingBytes += bytes.length
    if (this.#pendingBytes >= FLUSH_BYTES) this.flush()
    else if (this.#soon === undefined && this.#later === undefined) {
      const flood = this.#lastBytes >= FLOOD_MIN_BYTES && performance.now() - this.#lastAt < FLOOD_GAP_MS
      if (flood) this.#later = setTimeout(() => this.flush(), FLOOD_BATCH_MS)
      else this.#soon = setImmediate(() => this.flush())
    }
  }

  /** Hands over what was gathered so far, now. */
  flush(): void {
    this.#cancelTimers()
    if (this.#pendingBytes === 0) return
    const parts = this.#pending
    const total = this.#pendingBytes
    this.#pending = []
    this.#pendingBytes = 0
    this.#lastAt = performance.now()
    this.#lastBytes = total
    this.flushTo(parts, total)
  }

  /** Drops what was gathered (the destination is gone). */
  discard(): void {
    this.#cancelTimers()
    this.#pending = []
    this.#pendingBytes = 0
  }

  #cancelTimers(): void {
    if (this.#soon) clearImmediate(this.#soon)
    if (this.#later) clearTimeout(this.#later)
    this.#soon = undefined
    this.#later = undefined
  }
}
