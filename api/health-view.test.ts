/** The sidecar's health as /v1/health reports it: never waiting past HEALTH_WAIT_MS. */
import { describe, expect, it } from 'vitest'
import { HEALTH_WAIT_MS } from './tuning.ts'
import type { SidecarHealth } from '../schema/wire/health.ts'
import { SidecarHealthView } from './health-view.ts'

const answer = (generation: number): SidecarHealth =>
  ({ ok: true, generation, pid: 1, status: 'ok', database: { reachable: true, writable: true }, problems: [] }) as SidecarHealth

/** An ask that answers only when told to. */
function held() {
  let settle!: (value: SidecarHealth | Error) => void
  const promise = new Promise<SidecarHealth>((resolve, reject) => (settle = (v) => (v instanceof Error ? reject(v) : resolve(v))))
  return { promise, settle }
}

describe('SidecarHealthView', () => {
  it('reports an answer in time as fresh, then the last one with its age while an ask hangs, then its failure', async () => {
    const asks: ReturnType<typeof held>[] = []
    const view = new SidecarHealthView(() => {
      asks.push(held())
      return asks.at(-1)!.promise
    })
    const first = view.current()
    asks[0]!.settle(answer(7))
    expect(await first).toEqual({ reachable: true, generation: 7, ageMs: expect.any(Number), problems: [] })
    const started = performance.now()
    const stale = await view.current() // asks[1] never answers within the wait
    expect(performance.now() - started).toBeLessThan(HEALTH_WAIT_MS + 100)
    expect(stale).toMatchObject({ reachable: true, generation: 7, waitingMs: expect.any(Number) })
    expect(stale.ageMs).toBeGreaterThanOrEqual(HEALTH_WAIT_MS - 5)
    const again = await view.current() // shares the ask that is out
    expect(asks).toHaveLength(2)
    expect(again.waitingMs!).toBeGreaterThan(stale.waitingMs!)
    asks[1]!.settle(new Error('the sidecar health did not answer'))
    await new Promise((r) => setImmediate(r))
    const gone = view.current() // a new ask, also hanging: the failure is what is known now
    expect(await gone).toMatchObject({ reachable: false, error: 'the sidecar health did not answer', waitingMs: expect.any(Number) })
  })

  it('waits for the first answer, when nothing is known to report instead', async () => {
    const first = held()
    const view = new SidecarHealthView(() => first.promise)
    setTimeout(() => first.settle(answer(3)), HEALTH_WAIT_MS + 100)
    const started = performance.now()
    expect(await view.current()).toMatchObject({ reachable: true, generation: 3 })
    expect(performance.now() - started).toBeGreaterThanOrEqual(HEALTH_WAIT_MS + 90)
  })
})
