/**
 * The input queue's retry policy (web/client/input.ts, common/retry.ts), against a scripted write
 * that answers each attempt as told: every batch has its own key and a retry reuses it with the
 * same bytes; a batch whose outcome is unknown is retried in order, later input waiting behind
 * it; final answers stop at once; the time limit ends the retrying; hold() keeps a retry back.
 * The end-to-end proof with a stalled sidecar is test/cli/input-retry.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { MAX_INPUT_BYTES } from '../../schema/limits.ts'
import { GaveUpError, retrying } from '../../common/retry.ts'
import { ApiError, outcomeUnknown, TransportError, UnreachableError } from './api.ts'
import { InputQueue, type InputFailure } from './input.ts'

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)
const bytes = (s: string) => new TextEncoder().encode(s)
const unavailable = () => new ApiError(503, 'sidecar/unavailable', 'the terminal sidecar did not answer')

/** A write whose answers are scripted per attempt (an error to throw, or undefined: accepted). */
function scriptedWrite(answers: (attempt: { text: string; key: string; n: number }) => Error | undefined | Promise<void>) {
  const attempts: { text: string; key: string }[] = []
  const write = async (batch: Uint8Array, key: string) => {
    const attempt = { text: text(batch), key }
    attempts.push(attempt)
    const answer = await answers({ ...attempt, n: attempts.length })
    if (answer instanceof Error) throw answer
  }
  return { write, attempts }
}

describe('outcomeUnknown', () => {
  it('is true for no answer and for 502/503/504, false for every refusal', () => {
    expect(outcomeUnknown(new UnreachableError('http://x', new TypeError('fetch failed')))).toBe(true)
    expect(outcomeUnknown(new TransportError('no answer'))).toBe(true)
    for (const status of [502, 503, 504]) expect(outcomeUnknown(new ApiError(status, 'sidecar/unavailable', ''))).toBe(true)
    for (const status of [400, 404, 409, 410, 413, 422, 500]) expect(outcomeUnknown(new ApiError(status, 'x/y', ''))).toBe(false)
    expect(outcomeUnknown(new TypeError('boom'))).toBe(false)
  })
})

describe('retrying', () => {
  it('throws the last error once the time is up, and a final error at once', async () => {
    let calls = 0
    const started = Date.now()
    await expect(
      retrying(async () => (calls++, Promise.reject(unavailable())), { retryable: outcomeUnknown, giveUpMs: 300, firstDelayMs: 20 }),
    ).rejects.toMatchObject({ status: 503 })
    expect(Date.now() - started).toBeGreaterThanOrEqual(300)
    expect(calls).toBeGreaterThan(2)
    calls = 0
    await expect(
      retrying(async () => (calls++, Promise.reject(new ApiError(410, 'terminal/unavailable', ''))), {
        retryable: outcomeUnknown,
        firstDelayMs: 20,
      }),
    ).rejects.toMatchObject({ status: 410 })
    expect(calls).toBe(1)
  })

  it('gives up with GaveUpError when `ready` never lets a first attempt go', async () => {
    let calls = 0
    const never = new Promise<void>(() => {})
    await expect(retrying(async () => void calls++, { retryable: () => true, giveUpMs: 100, ready: () => never })).rejects.toBeInstanceOf(
      GaveUpError,
    )
    expect(calls).toBe(0)
  })
})

describe('InputQueue', () => {
  it('retries a batch whose outcome is unknown under the same key and bytes, in order, until it lands', async () => {
    const { write, attempts } = scriptedWrite(({ n }) =>
      n <= 3 ? (n === 2 ? new UnreachableError('http://x', new TypeError('fetch failed')) : unavailable()) : undefined,
    )
    const failures: InputFailure[] = []
    const queue = new InputQueue(write, (f) => failures.push(f), { firstDelayMs: 10 })
    queue.push(bytes('ls\r'))
    // Typed while the first batch is being retried: waits behind it, then goes as one batch.
    await new Promise((resolve) => setTimeout(resolve, 15))
    queue.push(bytes('pwd'))
    queue.push(bytes('\r'))
    await queue.drained()
    expect(failures).toEqual([])
    const first = attempts[0]
    expect(attempts.slice(0, 4)).toEqual([first, first, first, first])
    expect(first.text).toBe('ls\r')
    expect(attempts.slice(4)).toEqual([{ text: 'pwd\r', key: expect.any(String) }])
    expect(attempts[4].key).not.toBe(first.key)
  })

  it('gives every batch a key of its own, also across queues, and splits at MAX_INPUT_BYTES', async () => {
    const keys = new Set<string>()
    const sizes: number[] = []
    const write = async (batch: Uint8Array, key: string) => void (keys.add(key), sizes.push(batch.length))
    const queue = new InputQueue(write, () => {})
    queue.push(new Uint8Array(MAX_INPUT_BYTES * 2 + 5).fill(0x61))
    await queue.drained()
    const other = new InputQueue(write, () => {})
    other.push(bytes('x'))
    await other.drained()
    expect(sizes).toEqual([MAX_INPUT_BYTES, MAX_INPUT_BYTES, 5, 1])
    expect(keys.size).toBe(4)
    for (const key of keys) expect(key).toMatch(/^[\x21-\x7e]{1,128}$/)
  })

  it('sends exactly the bytes first pushed on every retry, even if the caller reuses its buffer', async () => {
    const { write, attempts } = scriptedWrite(({ n }) => (n === 1 ? unavailable() : undefined))
    const queue = new InputQueue(write, () => {}, { firstDelayMs: 10 })
    const buffer = bytes('abc')
    queue.push(buffer)
    buffer.set(bytes('XYZ'))
    await queue.drained()
    expect(attempts.map((a) => a.text)).toEqual(['abc', 'abc'])
  })

  it('stops at a final answer (409, 410) at once, dropping what was queued behind it, and goes on with later input', async () => {
    for (const refusal of [
      new ApiError(409, 'terminal/control-unavailable', 'read-only'),
      new ApiError(410, 'terminal/unavailable', 'gone'),
    ]) {
      let refuse = true
      const { write, attempts } = scriptedWrite(() => (refuse ? refusal : undefined))
      const failures: InputFailure[] = []
      const queue = new InputQueue(write, (f) => failures.push(f), { firstDelayMs: 10 })
      queue.push(bytes('one'))
      queue.push(bytes('two'))
      await queue.drained()
      expect(attempts).toHaveLength(1)
      expect(failures).toEqual([{ error: refusal, bytes: 6, uncertain: false }])
      refuse = false
      queue.push(bytes('three'))
      await queue.drained()
      expect(attempts.map((a) => a.text)).toEqual(['one', 'three'])
    }
  })

  it('gives up after the time limit and says the outcome is unknown, with the bytes queued behind it', async () => {
    const { write, attempts } = scriptedWrite(() => unavailable())
    const failures: InputFailure[] = []
    const queue = new InputQueue(write, (f) => failures.push(f), { giveUpMs: 200, firstDelayMs: 20 })
    queue.push(bytes('first'))
    await new Promise((resolve) => setTimeout(resolve, 30))
    queue.push(bytes('later'))
    await queue.drained()
    expect(failures).toEqual([{ error: expect.objectContaining({ status: 503 }), bytes: 10, uncertain: true }])
    expect(new Set(attempts.map((a) => `${a.key} ${a.text}`)).size).toBe(1)
  })

  it('retries a full input backlog (nothing was done) like an unknown outcome', async () => {
    const { write, attempts } = scriptedWrite(({ n }) => (n === 1 ? new ApiError(409, 'terminal/input-backlog-full', 'full') : undefined))
    const failures: InputFailure[] = []
    const queue = new InputQueue(write, (f) => failures.push(f), { firstDelayMs: 10 })
    queue.push(bytes('x'))
    await queue.drained()
    expect(failures).toEqual([])
    expect(attempts).toHaveLength(2)
  })

  it('keeps a retry back while held, and sends it on resume', async () => {
    const { write, attempts } = scriptedWrite(({ n }) => (n === 1 ? unavailable() : undefined))
    const queue = new InputQueue(write, () => {}, { firstDelayMs: 10 })
    queue.push(bytes('x'))
    queue.hold()
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(attempts).toHaveLength(1)
    queue.resume()
    await queue.drained()
    expect(attempts).toHaveLength(2)
  })

  it('stops retrying when its signal aborts', async () => {
    const { write, attempts } = scriptedWrite(() => unavailable())
    const abort = new AbortController()
    const failures: InputFailure[] = []
    const queue = new InputQueue(write, (f) => failures.push(f), { firstDelayMs: 10, signal: abort.signal })
    queue.push(bytes('x'))
    await new Promise((resolve) => setTimeout(resolve, 50))
    abort.abort()
    await queue.drained()
    const count = attempts.length
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(attempts.length).toBe(count)
    expect(failures).toHaveLength(1)
  })
})
