/**
 * A tool's request to a route whose 503 leaves the outcome unknown (input, starting a workflow
 * run), made safe to repeat with an Idempotency-Key of its own: retried within the tool call
 * (common/retry.ts) while the route answers 503 (the sidecar or the database did not answer) or
 * `retryable` says another attempt may help, for at most MCP_RETRY_MS. A request that never
 * landed after the sidecar did not answer becomes an error that says the outcome is unknown;
 * repeated by the agent, a tool call is a new request with a new key.
 */
import { TermkeepError } from '../../schema/errors.ts'
import { MCP_RETRY_MS } from '../tuning.ts'
import { retrying } from '../../common/retry.ts'
import { randomId } from '../../common/crypto.ts'
import type { Dispatcher } from './dispatch.ts'

export interface KeyedOptions {
  /** Another refusal worth retrying (nothing was done yet), beside a 503. */
  retryable?: (error: TermkeepError) => boolean
  /** Overrides MCP_RETRY_MS (tests). */
  retryMs?: number
  /** What may have happened and how to find out ("the keys may still be typed …"). */
  unknown: string
}

export async function keyedRequest<T>(call: Dispatcher, send: (key: string) => Promise<T>, options: KeyedOptions): Promise<T> {
  const key = randomId('mcp')
  const retryMs = options.retryMs ?? MCP_RETRY_MS
  const retryable = (error: unknown) => error instanceof TermkeepError && (error.status === 503 || options.retryable?.(error) === true)
  let unknown = false
  try {
    return await retrying(
      () =>
        send(key).catch((error: unknown) => {
          if (error instanceof TermkeepError && (error.code === 'sidecar/unavailable' || error.code === 'host/unavailable')) unknown = true
          throw error
        }),
      { retryable, giveUpMs: retryMs, signal: call.signal },
    )
  } catch (error) {
    if (!unknown || !retryable(error)) throw error
    throw new TermkeepError(
      'sidecar/unavailable',
      `the outcome is unknown: the terminal host did not confirm the request within ${retryMs / 1000} s; ${options.unknown}`,
      {
        outcome: 'unknown',
      },
    )
  }
}
