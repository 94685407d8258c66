/**
 * Frees a closed screen's memory promptly. A released or closed screen is garbage the moment its
 * terminal is disposed, but V8 collects an isolate's old generation only under allocation pressure:
 * an emulator worker that went quiet (every screen in it released — the point of releasing them)
 * allocates nothing more, so the ~13 MiB of a 10,000-row screen (its row objects and their cell
 * buffers, malloc'd ArrayBuffer stores) stayed allocated, measured 3 s after release as 135 MiB
 * of malloc in use for ten released screens, ~34 MiB after a full GC. One full collection after
 * the last close of a batch gives it back to V8's page pool and to malloc, where the next screen
 * reuses it (and V8 unmaps its freed pages). It needs `gc`, exposed by `--expose-gc`
 * (sidecar/node-flags.ts, process-wide, so in every worker); without it nothing happens.
 */
import { getHeapStatistics } from 'node:v8'
import { EMULATOR_COLLECT_AFTER_CLOSE_MS } from '../tuning.ts'

type Collect = (options?: { type: 'major'; execution: 'sync' }) => void

let timer: ReturnType<typeof setTimeout> | undefined

/** Collections run so far in this thread (tests). */
export let collections = 0

/** Heap (V8 and external) growth since the last collection after which a worker that goes quiet
 * collects: a screen's own state is ~1–2 MiB; more growth than this is mostly garbage. */
const COLLECT_AFTER_GROWTH_BYTES = 8 * 1024 * 1024

/** Heap in use after the last collection (V8 heap plus external memory, as V8 counts it). */
let baseline = 0
/** The same without external memory (`collectAfterWork({ external: false })`). */
let heapBaseline = 0

function heapInUse(external = true): number {
  const s = getHeapStatistics()
  return s.used_heap_size + (external ? s.external_memory : 0)
}

/**
 * After work that left garbage (parsing a flood, encoding a revision's whole history: tens of MiB
 * per worker; on the main thread, the revisions those encodes sent), one full collection once the
 * thread has been quiet EMULATOR_COLLECT_AFTER_CLOSE_MS: without allocation pressure V8 would keep
 * it, and the process's RSS with it, until the next burst (measured after twenty 15,000-line
 * terminals: ~37 MiB of the main thread's heap, given back by one collection). Called after every
 * task of a worker and every revision written; under constant work it runs at most once per
 * EMULATOR_COLLECT_AFTER_CLOSE_MS, when the heap grew that much (each worker's heap stood at
 * 45–50 MiB for ~10 MiB of screens in a soak of thirty terminals).
 */
export function collectAfterWork({ external = true } = {}): void {
  if (heapInUse(external) - (external ? baseline : heapBaseline) < COLLECT_AFTER_GROWTH_BYTES) return
  // Work that never pauses (a soak of busy terminals) would postpone a debounced collection
  // forever: once one is due it is not postponed again.
  if (timer === undefined) collectSoon()
}

/** Asks for one full collection EMULATOR_COLLECT_AFTER_CLOSE_MS after the last call. */
export function collectSoon(delayMs = EMULATOR_COLLECT_AFTER_CLOSE_MS): void {
  const gc = (globalThis as { gc?: Collect }).gc
  if (typeof gc !== 'function') return
  clearTimeout(timer)
  timer = setTimeout(() => {
    timer = undefined
    collections++
    // The second collection is what gives the pages back: after the first, V8 frees the objects but
    // keeps the pages it swept until a later collection (a 150 MiB heap: RSS −80 MiB after one,
    // −190 MiB after two). It costs little: the heap is small by then.
    gc()
    gc()
    baseline = heapInUse()
    heapBaseline = heapInUse(false)
  }, delayMs)
  // Never keeps the worker alive on its own.
  timer.unref?.()
}
