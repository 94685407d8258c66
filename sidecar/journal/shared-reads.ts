/**
 * Spool reads shared by the readers of one journal. During a flood the keeper sends the sidecar
 * index entries without their bytes, and the journal's readers — a watch or follow stream, the
 * emulator feed, the command-mark tracker — each read the new bytes from the spool. Read one by
 * one, that was three positioned reads per flush, each into a fresh buffer: the copies, the page
 * faults of fresh mappings (glibc maps every buffer of 128 KiB and more on its own:
 * sidecar/node-flags.ts) and the external memory V8 counts (each new buffer brings the main
 * thread's next mark-compact closer) were much of the sidecar's CPU per flood byte.
 *
 * Here a read of a range that an earlier read (done or in flight) covers is a view of that read's
 * buffer. Readers at the live edge ask for the same range in the same turn (the emulator feed and
 * the mark tracker do during a flood; a watch stream does when its client keeps up), so they share
 * one read. A read fetches only what its reader asked for: reading ahead for the others (up to
 * what the index holds) was measured to read 3.2 bytes per flood byte instead of ~1.4, since a
 * reader that lags (a watch stream behind a slower client) pages through the spool with windows of
 * its own and would over-read every time.
 *
 * A read's buffer is leased: readers that use the bytes at once and let go (framing, scanning,
 * copying for a worker) release their lease, and once the journal no longer keeps the read either,
 * the buffer goes back to a small pool for the next read, so a flood reuses a few buffers
 * instead of mapping, faulting in and collecting a new one per read. Not SharedArrayBuffers (which
 * would let the emulator feed hand them to its worker without a copy): V8 does not count those as
 * the isolate's external memory, so nothing made it collect them, and the sidecar's RSS grew by
 * 134 MiB instead of 70 over three 100 MiB floods. The journal keeps only its last reads, and none
 * once it has not been read for SHARED_READ_IDLE_MS; a stalled reader holds only its own lease.
 */
import type { Spool } from './spool.ts'

/** Reads kept per journal: the newest, and the one before it for a reader a flush behind. */
const SHARED_READS_KEPT = 2
/** Kept reads are let go once nobody read for this long (the memory of a terminal gone quiet). */
const SHARED_READ_IDLE_MS = 200
/** Pooled buffers are this large (a reader's window is at most 1 MiB); longer reads get their own. */
const POOL_BUFFER_BYTES = 1024 * 1024
/** Free buffers the process keeps for reuse (a few floods' worth in flight), dropped when idle. */
const POOL_FREE_BUFFERS = 4

const free: ArrayBuffer[] = []
let freeIdle: ReturnType<typeof setTimeout> | undefined

function take(length: number): { buffer: Buffer; pooled: ArrayBuffer | undefined } {
  if (length > POOL_BUFFER_BYTES) return { buffer: Buffer.allocUnsafe(length), pooled: undefined }
  const pooled = free.pop() ?? new ArrayBuffer(POOL_BUFFER_BYTES)
  return { buffer: Buffer.from(pooled, 0, length), pooled }
}

function give(pooled: ArrayBuffer): void {
  if (free.length >= POOL_FREE_BUFFERS) return
  free.push(pooled)
  if (freeIdle) return void freeIdle.refresh()
  freeIdle = setTimeout(() => {
    freeIdle = undefined
    free.length = 0
  }, SHARED_READ_IDLE_MS)
  freeIdle.unref()
}

/** Bytes a reader may use until it calls `release`; `pooled`: they are reused after that. */
export interface Lease {
  readonly bytes: Buffer
  readonly pooled: boolean
  release(): void
}

export const unleased = (bytes: Buffer): Lease => ({ bytes, pooled: false, release() {} })

interface Read {
  offset: number
  length: number
  reading: Promise<Buffer>
  pooled: ArrayBuffer | undefined
  /** Leases out, plus one while the journal keeps it. */
  refs: number
}

export class SharedReads {
  readonly #spool: Spool
  /** Oldest first. */
  #kept: Read[] = []
  #idle: ReturnType<typeof setTimeout> | undefined

  constructor(spool: Spool) {
    this.#spool = spool
  }

  /** Bytes [offset, offset + length) of the spool, leased; the caller never writes into them. */
  async read(offset: number, length: number): Promise<Lease> {
    this.#touch()
    const read = this.#covering(offset, length) ?? this.#start(offset, length)
    read.refs++
    let released = false
    const release = () => {
      if (released) return
      released = true
      this.#drop(read)
    }
    try {
      const bytes = await read.reading
      const from = offset - read.offset
      return { bytes: from === 0 && length === read.length ? bytes : bytes.subarray(from, from + length), pooled: !!read.pooled, release }
    } catch (error) {
      release()
      throw error
    }
  }

  /** Lets go of every kept read. */
  clear(): void {
    clearTimeout(this.#idle)
    this.#idle = undefined
    const kept = this.#kept
    this.#kept = []
    for (const read of kept) this.#drop(read)
  }

  #covering(offset: number, length: number): Read | undefined {
    for (let i = this.#kept.length - 1; i >= 0; i--) {
      const read = this.#kept[i]
      if (read.offset <= offset && offset + length <= read.offset + read.length) return read
    }
    return undefined
  }

  #start(offset: number, length: number): Read {
    const { buffer, pooled } = take(length)
    const read: Read = { offset, length, reading: this.#spool.readAt(offset, length, buffer), pooled, refs: 1 }
    this.#kept.push(read)
    if (this.#kept.length > SHARED_READS_KEPT) this.#drop(this.#kept.shift()!)
    // A failed read is not kept: the next reader tries again (each one waiting for it rejects).
    read.reading.catch(() => {
      if (!this.#kept.includes(read)) return
      this.#kept = this.#kept.filter((r) => r !== read)
      this.#drop(read)
    })
    return read
  }

  #drop(read: Read): void {
    if (--read.refs > 0 || !read.pooled) return
    // Only once the read is over: the OS may still be writing into the buffer.
    const pooled = read.pooled
    read.pooled = undefined
    read.reading.then(
      () => give(pooled),
      () => give(pooled),
    )
  }

  #touch(): void {
    if (this.#idle) return void this.#idle.refresh()
    this.#idle = setTimeout(() => this.clear(), SHARED_READ_IDLE_MS)
    this.#idle.unref()
  }
}
