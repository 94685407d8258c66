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
import { EMULATOR_COLLECT_AFTER_CLOSE_MS } from '../tuning.ts'

type Collect = (options?: { type: 'major'; execution: 'sync' }) => void

let timer: ReturnType<typeof setTimeout> | undefined

/** Collections run so far in this thread (tests). */
export let collections = 0

/** Asks for one full collection EMULATOR_COLLECT_AFTER_CLOSE_MS after the last call. */
export function collectSoon(delayMs = EMULATOR_COLLECT_AFTER_CLOSE_MS): void {
  const gc = (globalThis as { gc?: Collect }).gc
  if (typeof gc !== 'function') return
  clearTimeout(timer)
  timer = setTimeout(() => {
    timer = undefined
    collections++
    gc()
  }, delayMs)
  // Never keeps the worker alive on its own.
  timer.unref?.()
}
