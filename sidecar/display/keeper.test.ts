/**
 * Settle timing, by event counting under fake timers (no wall-clock assertions): a quiet window
 * after the last applied report, immediate settling once the byte source closed and the emulator
 * caught up, and coalescing of settles that come due while an encode runs.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { DisplayKeeper, type SettleSource } from './keeper.ts'
import type { EncodedRevision } from './revision.ts'
import type { DisplayEncodeResult } from './worker.ts'

class FakeEmulator implements SettleSource {
  caughtUp = true
  rebuilding = false
  unavailable = false
  listeners = new Set<(sequence: number) => void>()
  requests: Array<(result: DisplayEncodeResult) => void> = []
  sequence = 0
  onApplied(listener: (sequence: number) => void) {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
  apply() {
    this.sequence++
    for (const l of this.listeners) l(this.sequence)
  }
  request<T>(_kind: string, _payload?: unknown): Promise<T> {
    return new Promise<T>((resolve) => this.requests.push(resolve as (r: DisplayEncodeResult) => void))
  }
  answer(changed = true) {
    const next = this.requests.shift()!
    next(
      changed
        ? { changed: true, revision: { meta: { sequence: this.sequence } } as EncodedRevision }
        : { changed: false, sequence: this.sequence },
    )
  }
}

class Sink {
  submitted: EncodedRevision[] = []
  failures = 0
  submit(r: EncodedRevision) {
    this.submitted.push(r)
  }
  idle() {
    return Promise.resolve()
  }
}

/** Output without pause: `times` applied reports, `everyMs` apart. */
async function output(times: number, everyMs: number, each?: () => void) {
  for (let i = 0; i < times; i++) {
    emulator.apply()
    await vi.advanceTimersByTimeAsync(everyMs)
    each?.()
  }
}

let emulator: FakeEmulator
let bytes: { ended: boolean }
let sink: Sink
let keeper: DisplayKeeper

beforeEach(() => {
  vi.useFakeTimers()
  emulator = new FakeEmulator()
  bytes = { ended: false }
  sink = new Sink()
  keeper = new DisplayKeeper(emulator, bytes, sink, { settleMs: 250 })
})
afterEach(() => {
  keeper.dispose()
  vi.useRealTimers()
})

describe('DisplayKeeper', () => {
  it('settles once, a quiet window after the last applied report', async () => {
    for (let i = 0; i < 10; i++) {
      emulator.apply()
      await vi.advanceTimersByTimeAsync(200)
    }
    expect(emulator.requests).toHaveLength(0)
    await vi.advanceTimersByTimeAsync(60)
    expect(emulator.requests).toHaveLength(1)
    emulator.answer()
    await vi.advanceTimersByTimeAsync(1000)
    expect(sink.submitted).toHaveLength(1)
    expect(emulator.requests).toHaveLength(0)
  })

  it('settles output that never pauses every max-wait, even while the emulator is behind', async () => {
    keeper.dispose()
    keeper = new DisplayKeeper(emulator, bytes, sink, { settleMs: 250, maxWaitMs: 5_000 })
    emulator.caughtUp = false
    await output(120, 100, () => emulator.requests.length > 0 && emulator.answer())
    expect(keeper.encodes).toBe(2)
    expect(sink.submitted.map((r) => r.meta.sequence)).toEqual([51, 102])
  })

  it('settles nothing while a rebuilt screen replays what the lost one showed, max-wait included', async () => {
    keeper.dispose()
    keeper = new DisplayKeeper(emulator, bytes, sink, { settleMs: 250, maxWaitMs: 1_000 })
    await output(9, 100) // unsettled for 900 ms when the worker fails
    emulator.rebuilding = true // the new screen replays
    await output(30, 100)
    expect(emulator.requests).toHaveLength(0)
    emulator.rebuilding = false
    await output(1, 250)
    expect(emulator.requests).toHaveLength(1)
  })

  it('does not encode a rebuilt screen at its last settle while it is still short of the lost one', async () => {
    emulator.rebuilding = true
    emulator.caughtUp = false
    const drained = keeper.drain(1_000)
    await vi.advanceTimersByTimeAsync(1_000)
    await drained
    expect(emulator.requests).toHaveLength(0)
    expect(keeper.encodes).toBe(0)
  })

  it('does not settle while the emulator is behind the journal', async () => {
    emulator.caughtUp = false
    emulator.apply()
    await vi.advanceTimersByTimeAsync(1000)
    expect(emulator.requests).toHaveLength(0)
    emulator.caughtUp = true
    emulator.apply()
    await vi.advanceTimersByTimeAsync(250)
    expect(emulator.requests).toHaveLength(1)
  })

  it('settles at once when the byte source closed and the emulator caught up', async () => {
    bytes.ended = true
    emulator.apply()
    await vi.advanceTimersByTimeAsync(0)
    expect(emulator.requests).toHaveLength(1)
  })

  it('coalesces settles that come due during an encode into one more, and skips unchanged screens', async () => {
    emulator.apply()
    await vi.advanceTimersByTimeAsync(250)
    expect(emulator.requests).toHaveLength(1)
    for (let i = 0; i < 5; i++) {
      emulator.apply()
      await vi.advanceTimersByTimeAsync(250)
    }
    expect(emulator.requests).toHaveLength(1) // still the first encode
    emulator.answer()
    await vi.advanceTimersByTimeAsync(0)
    expect(emulator.requests).toHaveLength(1) // exactly one follow-up
    emulator.answer(false)
    await vi.advanceTimersByTimeAsync(1000)
    expect(emulator.requests).toHaveLength(0)
    expect(keeper.encodes).toBe(2)
    expect(sink.submitted).toHaveLength(1)
  })

  it('forces a re-send after a failed write', async () => {
    const seen: unknown[] = []
    emulator.request = <T>(_kind: string, payload?: unknown): Promise<T> => {
      seen.push(payload)
      return Promise.resolve({ changed: false, sequence: 0 } as T)
    }
    await keeper.settle()
    sink.failures = 1
    await keeper.settle()
    await keeper.settle()
    expect(seen).toEqual([{ force: false }, { force: true }, { force: false }])
  })
})
