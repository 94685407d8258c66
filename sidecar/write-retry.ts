/**
 * The sidecar's one way to wait out something that cannot take a write now (the database, disk
 * space): the write is tried again after PERSIST_RETRY_MS, doubling up to PERSIST_RETRY_MAX_MS,
 * and the start and the end of a run of failures are logged once each, and told to health
 * (storage/write-failures.ts): a full disk fails these writes while a tiny probe write lands.
 *
 *   const retry = new Retry(`persisting terminal ${key}`)
 *   try { await write(); retry.succeeded() } catch (error) { retry.failed(error, () => void again()) }
 */
import { PERSIST_RETRY_MAX_MS, PERSIST_RETRY_MS } from '../storage/tuning.ts'
import { WriteFailures } from '../storage/write-failures.ts'

/** The sidecar's real writes that failed lately, for its health (main.ts hands it over). */
export const writeFailures = new WriteFailures()

export class Retry {
  readonly #what: string
  readonly #firstMs: number
  readonly #failures: WriteFailures
  #delay: number
  #timer: ReturnType<typeof setTimeout> | undefined
  #failing = false

  /** `what` names the write in the log ("persisting terminal s/t"). */
  constructor(what: string, firstMs = PERSIST_RETRY_MS, failures = writeFailures) {
    this.#what = what
    this.#firstMs = firstMs
    this.#failures = failures
    this.#delay = firstMs
  }

  /** A try is scheduled. */
  get pending(): boolean {
    return this.#timer !== undefined
  }

  /** A try failed: `again` runs after the current wait (a timer that does not hold the process). */
  failed(error: unknown, again: () => void): void {
    if (!this.#failing) console.error(`termkeep sidecar: ${this.#what} failed; trying again`, error)
    this.#failing = true
    this.#failures.failed(this, this.#what, error)
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      again()
    }, this.#delay)
    this.#timer.unref()
    this.#delay = Math.min(this.#delay * 2, PERSIST_RETRY_MAX_MS)
  }

  /** A try succeeded: the next failure waits the first delay again. */
  succeeded(): void {
    if (this.#failing) console.error(`termkeep sidecar: ${this.#what} works again`)
    this.#failing = false
    this.#failures.succeeded(this)
    this.#delay = this.#firstMs
  }

  /** No more tries (shutdown, or given up). */
  cancel(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
  }
}
