import { describe, expect, it } from 'vitest'
import { Notifier } from './notifier.ts'

describe('Notifier', () => {
  it('wakes a waiter on any of several notifiers, once', async () => {
    const [a, b] = [new Notifier(), new Notifier()]
    const first = Notifier.any([a, b], 10_000)
    b.notify()
    expect(await first).toBe('changed')
    const second = Notifier.any([a, b], 10_000)
    a.notify()
    b.notify()
    expect(await second).toBe('changed')
  })

  it('times out, and answers an abort before or during the wait', async () => {
    const n = new Notifier()
    expect(await Notifier.any([n], 20)).toBe('timeout')
    const controller = new AbortController()
    const waiting = n.wait(10_000, controller.signal)
    controller.abort()
    expect(await waiting).toBe('aborted')
    expect(await n.wait(10_000, controller.signal)).toBe('aborted')
  })

  it('a notification reaches every waiter registered before it, and none registered after', async () => {
    const n = new Notifier()
    const woken: string[] = []
    const one = n.wait(10_000).then((r) => woken.push(`one:${r}`))
    const two = Notifier.any([n, new Notifier()], 10_000).then((r) => woken.push(`two:${r}`))
    n.notify()
    const late = n.wait(30).then((r) => woken.push(`late:${r}`))
    await Promise.all([one, two, late])
    expect(woken).toEqual(['one:changed', 'two:changed', 'late:timeout'])
  })
})
