/**
 * The input batches a terminal applied under an Idempotency-Key, so a retried batch (after a 503
 * whose outcome the client could not know) is typed at most once. Remembered per principal and
 * key, for INPUT_KEY_MEMORY_MS and at most INPUT_KEYS_REMEMBERED per terminal, oldest forgotten
 * first. Each one goes to the keeper with its batch (in the same frame), and the keeper remembers
 * it as long as this does: a sidecar that adopts the terminal after a restart starts from the
 * keeper's, so a batch the crashed one sent is still not typed twice.
 */
import { createHash } from 'node:crypto'
import { TermkeepError } from '../../schema/errors.ts'
import { INPUT_KEY_MEMORY_MS, INPUT_KEYS_REMEMBERED } from '../../schema/limits.ts'

/** One key as it is remembered (here, and in the keeper). */
export interface RememberedKey {
  /** The principal and the key. */
  id: string
  /** What was applied under the key: the attachment and the bytes, hashed. */
  fingerprint: string
  at: number
}

type Applied = Omit<RememberedKey, 'id'>

export class InputKeys {
  /** Insertion order is age order: the oldest entries are first. */
  readonly #applied = new Map<string, Applied>()
  readonly #now: () => number

  constructor(now: () => number = Date.now) {
    this.#now = now
  }

  /**
   * Writes `bytes` with `write` unless this principal's `key` was already applied: then true
   * (nothing written; it was, the first time), or 422 when the key was applied to other input.
   * A write that throws is not remembered, so its retry is tried again.
   */
  apply(
    principal: string | undefined,
    attachment: string | undefined,
    key: string,
    bytes: Uint8Array,
    write: (remembered: RememberedKey) => void,
  ): boolean {
    this.#forgetOld()
    const id = `${principal ?? ''}\n${key}`
    const fingerprint = createHash('sha256')
      .update(attachment ?? '')
      .update('\n')
      .update(bytes)
      .digest('base64')
    const applied = this.#applied.get(id)
    if (applied) {
      if (applied.fingerprint === fingerprint) return true
      throw new TermkeepError(
        'terminal/idempotency-key-reused',
        'this Idempotency-Key was already used for other input to this terminal; nothing was written',
        {
          key,
        },
      )
    }
    const at = this.#now()
    write({ id, fingerprint, at })
    this.#applied.set(id, { fingerprint, at })
    if (this.#applied.size > INPUT_KEYS_REMEMBERED) this.#applied.delete(this.#applied.keys().next().value!)
    return false
  }

  /** Takes on what the keeper remembered (a sidecar adopting the terminal), oldest first. */
  seed(keys: readonly RememberedKey[]): void {
    for (const { id, fingerprint, at } of [...keys].sort((a, b) => a.at - b.at)) this.#applied.set(id, { fingerprint, at })
    this.#forgetOld()
  }

  get size(): number {
    return this.#applied.size
  }

  #forgetOld(): void {
    const horizon = this.#now() - INPUT_KEY_MEMORY_MS
    for (const [id, applied] of this.#applied) {
      if (applied.at > horizon) break
      this.#applied.delete(id)
    }
  }
}
