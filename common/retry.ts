/**
 * Retrying a request whose outcome may be unknown (docs/retrying.md): attempt, and while the
 * error is one worth another attempt, wait with bounded backoff (RETRY_FIRST_DELAY_MS doubling to
 * RETRY_MAX_DELAY_MS) and attempt again, until one succeeds, an error is final, or `giveUpMs`
 * passed since the first attempt; then the last error is thrown. Only for requests that are safe
 * to repeat: idempotent ones, or ones that carry an Idempotency-Key. Timers only, no runtime
 * built-ins: the page, the CLI and the API's MCP tools share it.
 */
import { UNKNOWN_OUTCOME_RETRY_MS } from '../schema/limits.ts'

/** The wait before the first such retry, doubling up to the max: quick after a blip, while a
 * server that stays away is asked once every few seconds, not hammered. */
export const RETRY_FIRST_DELAY_MS = 250
export const RETRY_MAX_DELAY_MS = 4_000

export interface RetryOptions {
  /** Whether another attempt may help (the outcome is unknown, or nothing was done yet). */
  retryable(error: unknown): boolean
  /** From the first attempt (default UNKNOWN_OUTCOME_RETRY_MS). */
  giveUpMs?: number
  /** The first wait (default RETRY_FIRST_DELAY_MS; tests shorten it). */
  firstDelayMs?: number
  /** Stops waiting: the last error (or the abort reason, before any attempt) is thrown at once. */
  signal?: AbortSignal
  /**
   * Awaited before every attempt, e.g. until the caller holds control again; the wait counts
   * toward `giveUpMs` (past it, the last error is thrown, or a GaveUpError before any attempt).
   */
  ready?: () => Promise<void>
}

/** The time ran out before a first attempt could be made (`ready` never resolved). */
export class GaveUpError extends Error {
  override name = 'GaveUpError'
}

const NOT_YET: unique symbol = Symbol('not yet')

/** Resolves after `ms`, or early when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}

/** `promise`'s value, or NOT_YET once `ms` passed (or `signal` aborted) first. */
async function within<T>(promise: Promise<T>, ms: number, signal?: AbortSignal): Promise<T | typeof NOT_YET> {
  const stop = new AbortController()
  const timeout = pause(ms, signal ? AbortSignal.any([signal, stop.signal]) : stop.signal).then((): typeof NOT_YET => NOT_YET)
  try {
    return await Promise.race([promise, timeout])
  } finally {
    stop.abort()
  }
}

export async function retrying<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  const { retryable, signal, ready } = options
  const { giveUpMs = UNKNOWN_OUTCOME_RETRY_MS } = options
  const deadline = Date.now() + giveUpMs
  let delay = options.firstDelayMs ?? RETRY_FIRST_DELAY_MS
  let last: { error: unknown } | undefined
  const giveUp = (): never => {
    if (last) throw last.error
    if (signal?.aborted) throw signal.reason
    throw new GaveUpError(`not attempted within ${giveUpMs / 1000} s`)
  }
  for (;;) {
    if (signal?.aborted) giveUp()
    if (ready && (await within(ready(), Math.max(0, deadline - Date.now()), signal)) === NOT_YET) giveUp()
    if (signal?.aborted) giveUp()
    try {
      return await attempt()
    } catch (error) {
      last = { error }
      if (!retryable(error)) throw error
    }
    const left = deadline - Date.now()
    if (left <= 0) giveUp()
    await pause(Math.min(delay, left), signal)
    delay = Math.min(delay * 2, RETRY_MAX_DELAY_MS)
  }
}
