/**
 * Settling, on the main thread, per terminal. The emulator reports every applied sequence; when
 * none arrives for SETTLE_WINDOW_MS (or the byte source closed and the emulator caught up), the
 * keeper asks the worker to encode (`display-encode`) and hands a changed revision to the
 * RevisionWriter. Output that never pauses is settled anyway SETTLE_MAX_WAIT_MS after its first
 * unsettled change (at whatever sequence the emulator has applied by then); a screen rebuilt after
 * its worker failed is not settled until it is back where the lost one was. Nothing here is on the
 * byte path: the PTY and the journal never wait for it, and the emulator only pauses for the
 * encode itself.
 *
 * Bursts coalesce: at most one encode runs; settles that come due meanwhile collapse into one
 * more, and the writer keeps only the newest waiting revision. `drain()` (before the emulator is
 * closed) waits for the emulator to catch up, settles a last time and waits for the write.
 *
 * Idle release: once the output has been quiet EMULATOR_RELEASE_IDLE_MS and the newest revision,
 * written, holds everything the screen is (it was encoded at the sequence the emulator is at, and
 * it can be rebuilt from), the keeper asks the emulator to give its screen back.
 */
import { EMULATOR_RELEASE_IDLE_MS, SETTLE_MAX_WAIT_MS, SETTLE_WINDOW_MS } from '../tuning.ts'
import { untilCaughtUp } from '../emulator/emulator.ts'
import type { EncodedRevision } from './revision.ts'
import { DISPLAY_ENCODE, type DisplayEncodeRequest, type DisplayEncodeResult } from './worker.ts'

/** The part of the emulator (sidecar/emulator/emulator.ts) the keeper uses. */
export interface SettleSource {
  readonly caughtUp: boolean
  /** A rebuilt screen replaying what its lost one had shown: nothing to settle yet. */
  readonly rebuilding: boolean
  /** The screen could not be rebuilt after its worker failed: requests fail for good. */
  readonly unavailable: boolean
  onApplied(listener: (sequence: number) => void): () => void
  request<T>(kind: string, payload?: unknown): Promise<T>
  /** Idle release (sidecar/emulator/emulator.ts); absent: never released. */
  readonly appliedSequence?: number
  readonly released?: boolean
  readonly lastUsed?: number
  release?(): boolean
}

/** The part of the journal the keeper uses. */
export interface ByteSource {
  readonly ended: boolean
}

export interface RevisionSink {
  submit(revision: EncodedRevision): void
  /** What the database holds of the history (the encode carries only the rows after it). */
  readonly stored?: { token: string; from: number }
  idle(): Promise<void>
  /** Failed writes so far; a new failure makes the next settle re-send an unchanged screen. */
  readonly failures: number
  /** The last revision handed over is written, and a rebuild can start from it. */
  readonly restorable?: boolean
}

export interface KeeperOptions {
  settleMs?: number
  maxWaitMs?: number
  /** Counts settles that ran an encode (tests). */
  onSettle?: (result: DisplayEncodeResult) => void
  /** Quiet time before the emulator is released (0: never). */
  releaseMs?: number
  /** The sequence the newest revision already covers (an adopted terminal's). */
  encodedAt?: number
}

export class DisplayKeeper {
  readonly #source: SettleSource
  readonly #bytes: ByteSource
  readonly #sink: RevisionSink
  readonly #settleMs: number
  readonly #maxWaitMs: number
  /** When the first change not yet settled was applied (undefined: nothing unsettled). */
  #dirtySince: number | undefined
  readonly #onSettle?: (result: DisplayEncodeResult) => void
  readonly #unsubscribe: () => void
  #timer: ReturnType<typeof setTimeout> | undefined
  #running: Promise<void> | undefined
  #again = false
  #failuresSeen = 0
  #stopped = false
  readonly #releaseMs: number
  #releaseTimer: ReturnType<typeof setTimeout> | undefined
  /** The emulator sequence the last encode looked at. */
  #encodedAt = -1
  /** Encodes run and revisions handed to the writer (observability and tests). */
  encodes = 0
  revisions = 0

  constructor(source: SettleSource, bytes: ByteSource, sink: RevisionSink, options: KeeperOptions = {}) {
    this.#source = source
    this.#bytes = bytes
    this.#sink = sink
    this.#settleMs = options.settleMs ?? SETTLE_WINDOW_MS
    this.#maxWaitMs = options.maxWaitMs ?? SETTLE_MAX_WAIT_MS
    this.#onSettle = options.onSettle
    this.#releaseMs = options.releaseMs ?? EMULATOR_RELEASE_IDLE_MS
    this.#encodedAt = options.encodedAt ?? -1
    this.#unsubscribe = source.onApplied(() => this.#applied())
    this.#armRelease(this.#releaseMs)
  }

  #armRelease(delay: number): void {
    if (this.#releaseMs <= 0 || this.#stopped || !this.#source.release) return
    clearTimeout(this.#releaseTimer)
    this.#releaseTimer = setTimeout(() => this.#tryRelease(), Math.max(delay, 100))
    this.#releaseTimer.unref?.()
  }

  /** Releases the emulator when it has been quiet long enough and its newest revision is all of it. */
  #tryRelease(): void {
    const source = this.#source
    if (this.#stopped) return
    const quiet = Date.now() - (source.lastUsed ?? 0)
    if (quiet < this.#releaseMs) return this.#armRelease(this.#releaseMs - quiet)
    const covered =
      this.#encodedAt === source.appliedSequence && this.#dirtySince === undefined && !this.#running && this.#sink.restorable === true
    if (!source.released && covered && source.caughtUp) source.release?.()
    this.#armRelease(this.#releaseMs)
  }

  #applied(): void {
    if (this.#stopped) return
    clearTimeout(this.#timer)
    if (this.#source.rebuilding) {
      // An older screen than the one last settled: settling it would persist the past.
      this.#timer = undefined
      this.#dirtySince = undefined
      return
    }
    const now = Date.now()
    this.#dirtySince ??= now
    if ((this.#bytes.ended && this.#source.caughtUp) || now - this.#dirtySince >= this.#maxWaitMs) {
      this.#timer = undefined
      this.settle()
      return
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      // Still behind the journal: more `applied` reports are coming, and they re-arm the timer.
      if (this.#source.caughtUp) this.settle()
    }, this.#settleMs)
  }

  /** Encodes and persists now if the display changed; joins (and repeats once) a running settle. */
  settle(): Promise<void> {
    if (this.#running) {
      this.#again = true
      return this.#running
    }
    this.#running = this.#run().finally(() => (this.#running = undefined))
    return this.#running
  }

  async #run(): Promise<void> {
    do {
      this.#again = false
      this.#dirtySince = undefined
      const force = this.#sink.failures > this.#failuresSeen
      this.#failuresSeen = this.#sink.failures
      let result: DisplayEncodeResult
      try {
        result = await this.#source.request<DisplayEncodeResult>(DISPLAY_ENCODE, {
          force,
          stored: this.#sink.stored,
        } satisfies DisplayEncodeRequest)
      } catch {
        return // the emulator went away; its last settled revision stays
      }
      this.encodes++
      this.#encodedAt = result.changed ? result.revision.meta.sequence : result.sequence
      this.#onSettle?.(result)
      if (result.changed) {
        this.revisions++
        this.#sink.submit(result.revision)
      }
    } while (this.#again)
  }

  /**
   * The last settle before the emulator closes: wait (at most `timeoutMs`) for the emulator to
   * apply everything journaled, encode once more, and wait for the write. A rebuilt screen still
   * short of where the lost one was is not encoded: the revision already settled is newer.
   */
  async drain(timeoutMs: number): Promise<void> {
    await untilCaughtUp(this.#source, timeoutMs)
    this.#stop()
    await this.#running
    // A released screen that nothing brought back is what its newest revision shows already.
    if (!this.#source.rebuilding && !(this.#source.released && this.#source.caughtUp)) {
      this.#running = this.#run().finally(() => (this.#running = undefined))
      await this.#running
    }
    await this.#sink.idle()
  }

  #stop(): void {
    this.#stopped = true
    clearTimeout(this.#timer)
    clearTimeout(this.#releaseTimer)
    this.#timer = undefined
    this.#unsubscribe()
  }

  dispose(): void {
    this.#stop()
  }
}
