/**
 * watchOutput batches of one journal, read and encoded once and shared by every watcher that
 * reaches the same cursor. A batch (up to STREAM_BATCH_ITEMS items after a cursor) is a pure
 * function of the journal's contents, so watchers at one cursor get the same SSE bytes whoever
 * read them: 200 watchers of a flooding terminal had each read ~1 MiB from the spool and written
 * its own base64 of it, and the garbage of those copies (half the sidecar's CPU in GC) and the
 * encoding held the main thread for seconds at a time: its health did not answer for 7 s.
 *
 * Watchers of one terminal walk the same chain of cursors (each batch ends where the next one
 * starts), so a watcher a little behind finds the batches the first one left. Only a journal with
 * two or more watchers keeps batches once read, only until every watcher has read past them (kept
 * to the byte cap instead, 30 terminals with two watchers each held ~8 MiB of old batches apiece),
 * and at most WATCH_SHARED_BATCHES_BYTES of them; a watcher whose cursor is not kept reads its own
 * batch (and leaves it for those behind it).
 */
import { WATCH_SHARED_BATCHES_BYTES } from '../tuning.ts'
import type { SseFrames } from '../http/sse.ts'
import type { Journal } from './journal.ts'
import { frameItems } from './frames.ts'

/** Items read per spool round trip while streaming. */
export const STREAM_BATCH_ITEMS = 16

/** The SSE frames of the items after a cursor, and the cursor they end at. */
export interface Batch {
  frames: SseFrames
  last: number
}

const shared = new WeakMap<Journal, SharedBatches>()

/** One watcher's handle: its reads move its cursor. */
export interface BatchReader {
  read(after: number): Promise<Batch | undefined>
  leave(): void
  /** Batches its journal keeps now (for tests). */
  readonly keptBatches: number
}

export class SharedBatches {
  readonly #journal: Journal
  /** Each watcher's last cursor read. */
  readonly #cursors = new Map<object, number>()
  /** Kept batches by the cursor they follow, oldest first (a Map iterates in insertion order), and
   * their size once read (0 while in flight). */
  readonly #kept = new Map<number, { reading: Promise<Batch | undefined>; size: number }>()
  #bytes = 0

  private constructor(journal: Journal) {
    this.#journal = journal
  }

  /** A watcher of `journal` joins; it calls `leave` when its stream ends. */
  static join(journal: Journal): BatchReader {
    let batches = shared.get(journal)
    if (!batches) {
      batches = new SharedBatches(journal)
      shared.set(journal, batches)
    }
    const all = batches
    const watcher = {}
    all.#cursors.set(watcher, -1)
    return {
      read: (after) => {
        all.#cursors.set(watcher, after)
        all.#passed()
        return all.#read(after)
      },
      leave: () => all.#leave(watcher),
      get keptBatches() {
        return all.#kept.size
      },
    }
  }

  get #watchers(): number {
    return this.#cursors.size
  }

  #leave(watcher: object): void {
    if (!this.#cursors.delete(watcher)) return
    if (this.#watchers > 0) return void this.#passed()
    shared.delete(this.#journal)
    this.#kept.clear()
    this.#bytes = 0
  }

  /** Forgets the kept batches every watcher has read past. */
  #passed(): void {
    let lowest = Number.POSITIVE_INFINITY
    for (const cursor of this.#cursors.values()) lowest = Math.min(lowest, cursor)
    for (const cursor of this.#kept.keys()) if (cursor < lowest) this.#forget(cursor)
  }

  /** The batch after `after`, or undefined when nothing follows it yet. A spool read that fails
   * rejects for every watcher that waited for it (and is not kept). */
  #read(after: number): Promise<Batch | undefined> {
    const kept = this.#kept.get(after)
    if (kept) return kept.reading
    const reading = this.#journal.usePlanned(after, STREAM_BATCH_ITEMS, (plans, bytes): Batch | undefined =>
      plans.length === 0 ? undefined : { frames: frameItems(plans, bytes), last: plans.at(-1)!.last },
    )
    // In flight it is shared whatever the count (a second watcher may join meanwhile); once read,
    // it is kept only while someone else could take it.
    const entry = { reading, size: 0 }
    this.#kept.set(after, entry)
    reading.then(
      (batch) => (batch && this.#watchers > 1 ? this.#account(after, entry, batch.frames.bytes.length) : this.#forget(after, entry)),
      () => this.#forget(after, entry),
    )
    return reading
  }

  #account(after: number, entry: { size: number }, size: number): void {
    // Evicted while it was read, or everyone left meanwhile: not kept.
    if (this.#kept.get(after) !== entry) return
    entry.size = size
    this.#bytes += size
    for (const cursor of this.#kept.keys()) {
      if (this.#bytes <= WATCH_SHARED_BATCHES_BYTES) break
      if (cursor === after) continue // the newest stays, whatever its size
      this.#forget(cursor)
    }
  }

  #forget(after: number, entry?: { size: number }): void {
    const kept = this.#kept.get(after)
    if (!kept || (entry && kept !== entry)) return
    this.#kept.delete(after)
    this.#bytes -= kept.size
  }
}
