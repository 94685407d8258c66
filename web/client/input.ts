/**
 * Keystrokes to the input route, in order, each typed once, without one request per key: while a
 * write is in flight, later input is gathered and sent as one batch when it completes (split at
 * the route's MAX_INPUT_BYTES). Used by the page, `termkeep attach` and `termkeep send`.
 *
 * Every batch carries an Idempotency-Key of its own (`<queue id>-<n>`; a key is never used for
 * other bytes). A batch whose outcome is unknown (no answer, a 503 from a stalled sidecar) or that
 * was refused with nothing done (the program's input backlog is full) is sent again under the same
 * key with bounded backoff (common/retry.ts), so it is typed once however often it is sent. Later
 * input waits behind it, so the order holds. It stops at once on a final answer (the terminal is
 * gone: 410; control went elsewhere: 409) and after UNKNOWN_OUTCOME_RETRY_MS; then the owner is
 * told (`failed`), and the input queued behind the batch is dropped with it: typing resumes from a
 * known point, never with a gap in the middle.
 */
import { concatBytes } from '../../common/bytes.ts'
import { MAX_INPUT_BYTES } from '../../schema/limits.ts'
import { retrying } from '../../common/retry.ts'
import { ApiError, outcomeUnknown } from './api.ts'

export interface InputFailure {
  /** The last answer: an ApiError (refused), a TransportError (no answer), … */
  error: unknown
  /** The bytes not (known to be) typed: the failed batch and everything queued behind it. */
  bytes: number
  /** The failed batch may still have arrived: its outcome stayed unknown to the end. */
  uncertain: boolean
}

export interface InputQueueOptions {
  /** Overrides UNKNOWN_OUTCOME_RETRY_MS (tests). */
  giveUpMs?: number
  firstDelayMs?: number
  /** Ends the queue: nothing more is sent or retried. */
  signal?: AbortSignal
}

/** Worth another attempt under the same key: the outcome is unknown, or nothing was done. */
export function retryableInput(error: unknown): boolean {
  return outcomeUnknown(error) || (error instanceof ApiError && error.code === 'terminal/input-backlog-full')
}

function queueId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(9))
  return `in-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`
}

export class InputQueue {
  readonly #id = queueId()
  #batches = 0
  #pending: Uint8Array[] = []
  #flushing: Promise<void> | undefined
  #held: { promise: Promise<void>; release: () => void } | undefined

  constructor(
    private readonly write: (bytes: Uint8Array, key: string) => Promise<void>,
    private readonly failed: (failure: InputFailure) => void,
    private readonly options: InputQueueOptions = {},
  ) {}

  push(bytes: Uint8Array): void {
    if (bytes.length === 0 || this.options.signal?.aborted) return
    this.#pending.push(bytes)
    this.#flushing ??= this.#flush()
  }

  /** Resolves once everything pushed so far was written (or given up on). */
  async drained(): Promise<void> {
    while (this.#flushing) await this.#flushing
  }

  /**
   * Holds sending (a request in flight still completes): while control is being confirmed, e.g.
   * after a reconnect, a write could only be refused as read-only. The wait counts toward the
   * batch's time limit.
   */
  hold(): void {
    if (this.#held) return
    let release!: () => void
    const promise = new Promise<void>((resolve) => (release = resolve))
    this.#held = { promise, release }
  }

  resume(): void {
    const held = this.#held
    this.#held = undefined
    held?.release()
  }

  async #flush(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        // Always a copy: a retry must send exactly the bytes its key was first sent with, even if
        // the caller reuses its buffers.
        const bytes = concatBytes(this.#pending.splice(0))
        for (let offset = 0; offset < bytes.length; offset += MAX_INPUT_BYTES) {
          const batch = bytes.subarray(offset, offset + MAX_INPUT_BYTES)
          try {
            await this.#send(batch)
          } catch (error) {
            const bytesLeft = bytes.length - offset + this.#pending.reduce((n, part) => n + part.length, 0)
            this.#pending = []
            this.failed({ error, bytes: bytesLeft, uncertain: outcomeUnknown(error) })
            break
          }
        }
      }
    } finally {
      this.#flushing = undefined
    }
  }

  #send(batch: Uint8Array): Promise<void> {
    const key = `${this.#id}-${++this.#batches}`
    return retrying(() => this.write(batch, key), {
      retryable: retryableInput,
      giveUpMs: this.options.giveUpMs,
      firstDelayMs: this.options.firstDelayMs,
      signal: this.options.signal,
      ready: async () => {
        while (this.#held) await this.#held.promise
      },
    })
  }
}
