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
    return Notifier.any([this], timeoutMs, signal)
  }

  /**
   * Waits until any of `notifiers` fires, the time passes or `signal` aborts: one timer and one
   * abort listener for all of them. (Racing one wait per notifier and aborting the losers cost an
   * AbortController, AbortSignal.any and a DOMException per wake-up: ~70 µs of every keystroke's
   * echo on a follow stream here.)
   */
  static any(notifiers: readonly Notifier[], timeoutMs: number, signal?: AbortSignal): Promise<WaitResult> {
    if (signal?.aborted) return Promise.resolve('aborted')
    return new Promise((resolve) => {
      const done = (result: WaitResult) => {
        for (const notifier of notifiers) notifier.#waiters.delete(done)
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        resolve(result)
      }
      const onAbort = () => done('aborted')
      const timer = setTimeout(() => done('timeout'), timeoutMs)
      signal?.addEventListener('abort', onAbort, { once: true })
      for (const notifier of notifiers) notifier.#waiters.add(done)
    })
  }
}
