/**
 * Wakes waiters when something changed. A waiter checks its condition first and only then waits,
 * with no await in between, so on one event loop no change can slip through unseen.
 */
export type WaitResult = 'changed' | 'timeout' | 'aborted'

export class Notifier {
  #waiters = new Set<(result: WaitResult) => void>()

  notify(): void {
    const waiters = [...this.#waiters]
    this.#waiters.clear()
    for (const wake of waiters) wake('changed')
  }

  wait(timeoutMs: number, signal?: AbortSignal): Promise<WaitResult> {
    if (signal?.aborted) return Promise.resolve('aborted')
    return new Promise((resolve) => {
      const done = (result: WaitResult) => {
        this.#waiters.delete(done)
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        resolve(result)
      }
      const onAbort = () => done('aborted')
      const timer = setTimeout(() => done('timeout'), timeoutMs)
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiters.add(done)
    })
  }
}
