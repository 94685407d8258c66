/**
 * The keeper's way to wait out a write that cannot land now (a full disk): tried again after
 * KEEPER_RETRY_MS, doubling up to KEEPER_RETRY_MAX_MS. Every failure is reported (the sidecar
 * counts them in its health, which forgets a failure that is not renewed), saying whether it is
 * the first of a run, and so is the end of a run.
 */
import { KEEPER_RETRY_MAX_MS, KEEPER_RETRY_MS } from './tuning.ts'

export interface BackoffReports {
  /** A failure; `first` when the writes worked before it. */
  failing(error: Error, first: boolean): void
  /** A success after failures. */
  recovered(): void
}

export class Backoff {
  readonly #reports: BackoffReports
  #delay = KEEPER_RETRY_MS
  #timer: NodeJS.Timeout | undefined
  #failing = false

  constructor(reports: BackoffReports) {
    this.#reports = reports
  }

  get pending(): boolean {
    return this.#timer !== undefined
  }

  get failing(): boolean {
    return this.#failing
  }

  failed(error: Error, again: () => void): void {
    this.#reports.failing(error, !this.#failing)
    this.#failing = true
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      again()
    }, this.#delay)
    this.#delay = Math.min(this.#delay * 2, KEEPER_RETRY_MAX_MS)
  }

  succeeded(): void {
    if (this.#failing) this.#reports.recovered()
    this.#failing = false
    this.#delay = KEEPER_RETRY_MS
  }

  cancel(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
  }
}
