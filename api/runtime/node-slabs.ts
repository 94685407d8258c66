/**
 * Where a relayed stream's reads are kept until they are written on (node-stream.ts, node-relay.ts):
 * slabs of memory reused once every piece cut from one has been written, instead of a new Buffer
 * per socket read. Each new Buffer of a read's size (~0.5–1 MiB during a flood) is memory outside
 * V8's heap that V8 nevertheless counts, and as it adds up V8 runs full collections of the whole
 * heap: relaying 240 MiB, `serve --api-only` ran one every ~17 MiB (--trace-gc), each marking its
 * ~25 MB of live objects, which made up most of the relay's CPU.
 *
 * A piece is leased: whoever holds it calls the release it came with once nothing refers to its
 * bytes any more (for the relay, when the client's socket has taken them). A piece never
 * released only keeps its slab from being reused; it is then freed as any Buffer is.
 */

/** One slab holds this many bytes: two reads of the largest size (node-stream.ts reads at most
 * 1 MiB), so most reads take no allocation; with SPARE_SLABS, an API process keeps at most ~6 MiB
 * of them once streams have run. */
export const SLAB_BYTES = 2 * 1024 * 1024
/** Idle slabs kept for reuse; beyond them a slab whose pieces all came back is left to V8. */
const SPARE_SLABS = 2

interface Slab {
  bytes: Buffer
  /** Pieces handed out and not yet released. */
  leased: number
  /** Bytes of it handed out so far (the current slab's next piece starts here). */
  used: number
}

export interface Piece {
  bytes: Buffer
  release: () => void
}

const spare: Slab[] = []
let current: Slab | undefined

function newSlab(): Slab {
  const slab = spare.pop()
  if (slab) {
    slab.used = 0
    return slab
  }
  return { bytes: Buffer.allocUnsafeSlow(SLAB_BYTES), leased: 0, used: 0 }
}

function returned(slab: Slab): void {
  if (--slab.leased > 0 || slab === current) return
  if (spare.length < SPARE_SLABS) spare.push(slab)
}

/** A copy of `view` (at most SLAB_BYTES) in a slab, with the release that gives its room back. */
export function copyToSlab(view: Uint8Array): Piece {
  if (view.length > SLAB_BYTES) return { bytes: Buffer.from(view), release: () => {} }
  if (!current || current.used + view.length > SLAB_BYTES) {
    const previous = current
    current = newSlab()
    // The slab given up is reusable once its last piece comes back (now, if none is out).
    if (previous && previous.leased === 0 && spare.length < SPARE_SLABS) spare.push(previous)
  }
  const slab = current
  const bytes = slab.bytes.subarray(slab.used, slab.used + view.length)
  bytes.set(view)
  slab.used += view.length
  slab.leased++
  let once = false
  return {
    bytes,
    release: () => {
      if (once) return
      once = true
      returned(slab)
    },
  }
}
