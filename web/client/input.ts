/**
 * Keystrokes to the input route, in order, without one request per key: while a write is in
 * flight, later input is gathered and sent as one write when it completes (split at the route's
 * MAX_INPUT_BYTES). Used by the page and by `termkeep attach`.
 */
import { MAX_INPUT_BYTES } from '../../schema/limits.ts'

export class InputQueue {
  #pending: Uint8Array[] = []
  #flushing: Promise<void> | undefined

  constructor(
    private readonly write: (bytes: Uint8Array) => Promise<void>,
    private readonly failed: (error: unknown) => void,
  ) {}

  push(bytes: Uint8Array): void {
    if (bytes.length === 0) return
    this.#pending.push(bytes)
    this.#flushing ??= this.#flush()
  }

  /** Resolves once everything pushed so far was written (or refused). */
  async drained(): Promise<void> {
    while (this.#flushing) await this.#flushing
  }

  async #flush(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const parts = this.#pending.splice(0)
        const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
        let at = 0
        for (const part of parts) {
          bytes.set(part, at)
          at += part.length
        }
        for (let offset = 0; offset < bytes.length; offset += MAX_INPUT_BYTES) {
          await this.write(bytes.subarray(offset, offset + MAX_INPUT_BYTES)).catch(this.failed)
        }
      }
    } finally {
      this.#flushing = undefined
    }
  }
}
