/**
 * The main-thread side of the emulators. `EmulatorPool` owns a few worker threads; each
 * `Emulator` is one terminal's screen in one of them. An emulator feeds itself from the journal
 * (reading the spool like any other reader), so the PTY and the journal's readers never wait for
 * it: it lags during floods by at most EMULATOR_MAX_INFLIGHT_BYTES in flight, and catches up.
 *
 * Hook point for the display issue: `emulator.onApplied(listener)` reports every applied
 * sequence (settle timing), `emulator.caughtUp` tells whether the screen reflects the whole journal,
 * and `emulator.request(kind, payload)` runs a worker-side handler registered in `handlers.ts`.
 * An `EmulatorObserver` given to the pool sees every emulator open; its `drain()` runs when the
 * emulator is disposed, before the worker closes the screen (the display's last settle), and
 * `pool.close()` waits for pending drains.
 *
 * Idle release: a quiet emulator nothing holds (`hold()`: followers, screen watchers) can give its
 * screen back (`release()`, asked by the display keeper once the newest revision covers it); it is
 * rebuilt on demand — new output, a request (snapshot, screen, encode) — from what `restoreFrom`
 * loads (the newest revision and its state), then fed the journal after that revision. Without a
 * restorable revision it replays its journal from the start, as after a worker failure.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import { Worker } from 'node:worker_threads'
import { TermkeepError } from '../../schema/errors.ts'
import type { KeyModes } from '../../schema/keys.ts'
import { EMULATOR_FAST_FORWARD_WINDOW_BYTES, EMULATOR_MAX_INFLIGHT_BYTES, EMULATOR_MAX_REBUILDS, EMULATOR_WORKERS } from '../tuning.ts'
import type { Journal } from '../journal/journal.ts'
import type { NativeRecord } from '../journal/coalesce.ts'
import { emulatorWorkerSource } from './bundle.ts'
import type { EmulatorSnapshot, FromWorker, RestorePayload, ToWorker, WireRecord } from './protocol.ts'

/** The pump's wait between checks when the journal is idle (it is woken on every append). */
const IDLE_WAIT_MS = 60_000
/**
 * Adopted screens with output after their revision are rebuilt this many at a time, in order of
 * adoption: each rebuild replays what its terminal printed while no sidecar ran, and ten at once
 * right after a restart took the CPU the clients coming back needed (measured: a terminal live
 * again after 2.2–3.9 s instead of 0.9–1.9 s, on a loaded 2-core machine). A request for a screen
 * (a follow's snapshot, the plain screen) rebuilds that one at once.
 */
const ADOPTED_REBUILDS_AT_ONCE = 1
/** How long one adopted rebuild holds the queue at most (a flood never quite catches up). */
const ADOPTED_REBUILD_MAX_MS = 10_000
/** The rebuilds start this long after the first adoption: the first moments after a restart
 * belong to the clients reconnecting (their follows resume from the journal, not the screen). */
const ADOPTED_REBUILD_DELAY_MS = 2_000

/** An emulator worker left without screens (all released or closed) ends after this long: its
 * isolate's heap goes back to the system, where an idle worker kept ~10–15 MiB of it; a new
 * screen starts a worker again (~50 ms). Long enough that a batch of releases, or a terminal
 * closed and another opened, does not restart it. */
const WORKER_IDLE_EXIT_MS = 5_000

/** The emulator workers' thread name (fault injection in tests finds them by it). */
export const EMULATOR_WORKER_NAME = 'termkeep-emulator'

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void }

/** Sees each emulator as it opens (display issue: settling); `drain` runs at dispose, first. */
export type EmulatorObserver = (emulator: Emulator, journal: Journal) => { drain(): Promise<void> } | undefined

/** Resolves once `screen` reflects every record journaled so far (caughtUp), or after `timeoutMs`. */
export async function untilCaughtUp(
  screen: { readonly caughtUp: boolean; onApplied(listener: () => void): () => void },
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!screen.caughtUp && Date.now() < deadline) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(1, deadline - Date.now()))
      const off = screen.onApplied(done)
      function done() {
        clearTimeout(timer)
        off()
        resolve()
      }
    })
  }
}

class WorkerSlot {
  readonly worker: Worker
  readonly emulators = new Map<string, Emulator>()
  readonly pending = new Map<number, Pending>()
  failure: Error | undefined
  /** Ended on purpose (idle): its exit is no failure. */
  retired = false
  #idle: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly onFail: (slot: WorkerSlot) => void,
    private readonly onIdle: (slot: WorkerSlot) => void,
  ) {
    this.worker = new Worker(emulatorWorkerSource(), { execArgv: [], name: EMULATOR_WORKER_NAME })
    this.worker.unref()
    this.worker.on('message', (message: FromWorker) => this.#receive(message))
    this.worker.on('error', (error) => this.#fail(error))
    this.worker.on('exit', (code) => this.#fail(new Error(`emulator worker exited with ${code}`)))
  }

  post(message: ToWorker, transfer: ArrayBuffer[] = []): void {
    if (!this.failure) this.worker.postMessage(message, transfer)
  }

  /** A screen left this worker: with none left (and no answer awaited) it ends after a while. */
  left(): void {
    clearTimeout(this.#idle)
    if (this.emulators.size > 0) return
    this.#idle = setTimeout(() => {
      if (this.emulators.size === 0 && this.pending.size === 0 && !this.failure) this.onIdle(this)
    }, WORKER_IDLE_EXIT_MS)
    this.#idle.unref()
  }

  /** A screen was placed here. */
  joined(): void {
    clearTimeout(this.#idle)
  }

  retire(): Promise<number> {
    this.retired = true
    clearTimeout(this.#idle)
    return this.worker.terminate()
  }

  #receive(message: FromWorker): void {
    if (message.type === 'applied') {
      this.emulators.get(message.key)?.applied(message.sequence, message.bytes, message.skipped)
      return
    }
    const pending = this.pending.get(message.id)
    if (!pending) return
    this.pending.delete(message.id)
    if (message.ok) pending.resolve(message.value)
    else pending.reject(new Error(message.error))
  }

  #fail(error: Error): void {
    if (this.failure || this.retired) return
    this.failure = error
    const failed = new TermkeepError(
      'sidecar/unavailable',
      `a terminal screen's emulator failed (${error.message}); it is rebuilt from the output journal, try again`,
    )
    for (const { reject } of this.pending.values()) reject(failed)
    this.pending.clear()
    this.onFail(this)
  }
}

export class EmulatorPool {
  readonly #slots: WorkerSlot[] = []
  readonly #size: number
  readonly #observer: EmulatorObserver | undefined
  readonly #draining = new Set<Promise<void>>()
  /** Adopted screens waiting for their rebuild, and how many rebuild now. */
  readonly #adopted: Emulator[] = []
  #adoptedRebuilding = 0
  #adoptedStart: NodeJS.Timeout | undefined
  #nextRequest = 1
  #closing = false

  constructor(size = EMULATOR_WORKERS, observer?: EmulatorObserver) {
    this.#size = size
    this.#observer = observer
  }

  /**
   * A screen for one terminal, fed from its journal from sequence 0 — or, for a terminal adopted
   * from the keeper after a restart (`settled`: its newest revision), rebuilt from that revision
   * and the journal after it, once something asks or output after it exists (a released screen).
   */
  open(key: string, journal: Journal, settled?: Settled): Emulator {
    const emulator = new Emulator(this, key, journal, settled)
    emulator.observe(this.#observer?.(emulator, journal))
    if (settled) {
      this.#adopted.push(emulator)
      this.#adoptedStart ??= setTimeout(() => this.#nextAdopted(), ADOPTED_REBUILD_DELAY_MS)
      this.#adoptedStart.unref()
    }
    return emulator
  }

  /** Rebuilds the adopted screens that need it, ADOPTED_REBUILDS_AT_ONCE at a time. */
  #nextAdopted(): void {
    while (this.#adoptedRebuilding < ADOPTED_REBUILDS_AT_ONCE && this.#adopted.length > 0) {
      const emulator = this.#adopted.shift()!
      this.#adoptedRebuilding++
      void emulator
        .resumeReleased(ADOPTED_REBUILD_MAX_MS)
        .catch(() => {})
        .finally(() => {
          this.#adoptedRebuilding--
          this.#nextAdopted()
        })
    }
  }

  /** @internal a slot for a screen that is not placed yet (an adopted, released one). */
  anySlot(): WorkerSlot {
    return this.#pick()
  }

  /** @internal places an emulator's screen in a worker (again, after its worker failed or it was
   * released), fresh from the journal's start or restored from a revision. */
  place(emulator: Emulator, journal: Journal, restore?: RestorePayload): WorkerSlot {
    const slot = this.#pick()
    slot.emulators.set(emulator.key, emulator)
    slot.joined()
    const { cols, rows } = restore ? restore.begin : journal.initialSize
    slot.post({ type: 'open', key: emulator.key, cols, rows, restore })
    return slot
  }

  /** A worker died (a bug, memory): its screens are rebuilt in another from their journals. */
  #failed(slot: WorkerSlot): void {
    if (this.#closing) return
    const emulators = [...slot.emulators.values()]
    slot.emulators.clear()
    console.error(
      `termkeep sidecar: an emulator worker failed (${slot.failure?.message}); rebuilding ${emulators.length} screen(s) from their journals`,
    )
    for (const emulator of emulators) emulator.rebuild()
  }

  /** @internal keeps a dispose-time drain so close() can wait for it. */
  track(drain: Promise<void>): void {
    this.#draining.add(drain)
    void drain.finally(() => this.#draining.delete(drain))
  }

  nextRequestId(): number {
    return this.#nextRequest++
  }

  async close(): Promise<void> {
    await Promise.all([...this.#draining])
    this.#closing = true
    await Promise.all(this.#slots.map((slot) => slot.worker.terminate()))
    this.#slots.length = 0
  }

  /** Workers running now (tests, the memory breakdown). */
  get workers(): number {
    return this.#slots.length
  }

  /** A worker with no screen left for WORKER_IDLE_EXIT_MS ends; the next screen starts another. */
  #retire(slot: WorkerSlot): void {
    const at = this.#slots.indexOf(slot)
    if (at >= 0) this.#slots.splice(at, 1)
    void slot.retire()
  }

  #pick(): WorkerSlot {
    for (let i = this.#slots.length - 1; i >= 0; i--) if (this.#slots[i].failure) this.#slots.splice(i, 1)
    if (this.#slots.length < this.#size) {
      const slot = new WorkerSlot(
        (failed) => this.#failed(failed),
        (idle) => this.#retire(idle),
      )
      this.#slots.push(slot)
      return slot
    }
    return this.#slots.reduce((a, b) => (b.emulators.size < a.emulators.size ? b : a))
  }
}

/** A terminal's newest settled revision: its sequence, and whether a screen can be rebuilt from it. */
export interface Settled {
  sequence: number
  restorable: boolean
}

export class Emulator {
  readonly key: string
  /** Adopted after a restart: the revision the screen resumes from (display/service.ts seeds its
   * settling with it, so an unchanged screen writes no revision again). */
  readonly adopted: Settled | undefined
  readonly #pool: EmulatorPool
  #slot: WorkerSlot
  /** Released: the screen is gone from its worker until `#live()` rebuilds it. */
  #released = false
  #restoring: Promise<void> | undefined
  #restorer: (() => Promise<RestorePayload | undefined>) | undefined
  #holds = 0
  #requests = 0
  #pumps = 0
  /** When the screen was last fed, asked or rebuilt (idle release waits for quiet). */
  lastUsed = Date.now()
  /** Releases and rebuilds so far (observability, tests). */
  releases = 0
  restores = 0
  /** Times its worker failed while it was replaying (the likely culprit); beyond
   * EMULATOR_MAX_REBUILDS the screen stays unavailable. */
  #rebuilds = 0
  /** After a rebuild: the sequence the lost screen had reached; until the new one gets there it
   * shows older output (not to be settled or sent as news). */
  #rebuildTarget = 0
  #gaveUp = false
  readonly #journal: Journal
  readonly #release: () => void
  readonly #stop = new AbortController()
  readonly #listeners = new Set<(sequence: number) => void>()
  #sent = 0
  #applied = 0
  #inflight = 0
  #wake: (() => void) | undefined
  #observation: { drain(): Promise<void> } | undefined
  /** Journal bytes the worker fast-forwarded (skipped as provably scrolled out). */
  #skipped = 0
  #disposing = false

  constructor(pool: EmulatorPool, key: string, journal: Journal, adopted?: Settled) {
    this.#pool = pool
    this.key = key
    this.adopted = adopted
    this.#journal = journal
    this.#release = journal.attach()
    if (adopted) {
      // Released at the revision: the screen is what it shows until more is asked or printed.
      this.#slot = pool.anySlot()
      this.#released = true
      this.#sent = adopted.sequence
      this.#applied = adopted.sequence
      return
    }
    this.#slot = pool.place(this, journal)
    this.#startPump()
  }

  /** @internal an adopted screen starts released (its observer gave it its restorer by now): with
   * output after its revision it is rebuilt now, and this resolves once it reflects what was
   * journaled when it began (or after `maxMs`); then it is watched like any released screen. */
  async resumeReleased(maxMs: number): Promise<void> {
    const target = this.#journal.lastSequence
    if (this.#released && target > this.#sent) {
      await this.#live()
      const deadline = Date.now() + maxMs
      while (this.#applied < target && !this.#stop.signal.aborted && !this.#released && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.max(1, deadline - Date.now()))
          const off = this.onApplied(done)
          function done() {
            clearTimeout(timer)
            off()
            resolve()
          }
        })
      }
    }
    void this.#watchReleased()
  }

  #startPump(): void {
    const slot = this.#slot
    // One pump at a time: a rebuilt screen may land in the same worker as the one it replaces.
    const generation = ++this.#pumps
    void this.#pump(slot, generation).catch((error: unknown) => {
      if (!this.#stop.signal.aborted && !slot.failure) console.error(`termkeep emulator ${this.key}: feed stopped`, error)
    })
  }

  /** Keeps the screen from being released (a follower, a screen watcher) until the call returned
   * is called. */
  hold(): () => void {
    this.#holds++
    let held = true
    return () => {
      if (held) this.#holds--
      held = false
    }
  }

  /** Where a released screen comes back from (the display service: the newest revision). */
  restoreFrom(load: () => Promise<RestorePayload | undefined>): void {
    this.#restorer = load
  }

  get released(): boolean {
    return this.#released
  }

  /**
   * Gives the screen back if nothing needs it: caught up, no hold, no request in flight, not
   * rebuilding, not closing. Returns whether it did.
   */
  release(): boolean {
    if (this.#released || this.#disposing || this.#stop.signal.aborted || this.#gaveUp) return false
    if (this.#holds > 0 || this.#requests > 0 || !this.caughtUp || this.rebuilding || this.#slot.failure || !this.#restorer) return false
    this.#released = true
    this.releases++
    this.#slot.emulators.delete(this.key)
    this.#slot.post({ type: 'close', key: this.key })
    this.#slot.left()
    this.#wake?.()
    void this.#watchReleased()
    return true
  }

  /** While released: the first new record brings the screen back. */
  async #watchReleased(): Promise<void> {
    const signal = this.#stop.signal
    while (this.#released && !signal.aborted) {
      if (this.#journal.lastSequence > this.#sent) return void this.#live().catch(() => {})
      if (this.#journal.ended || this.#journal.retired) return
      await this.#journal.wait(this.#sent, IDLE_WAIT_MS, signal)
    }
  }

  /** The screen is in a worker (rebuilt first if it was released). */
  #live(): Promise<void> {
    if (!this.#released) return Promise.resolve()
    this.#restoring ??= this.#restore().finally(() => (this.#restoring = undefined))
    return this.#restoring
  }

  async #restore(): Promise<void> {
    let payload: RestorePayload | undefined
    try {
      payload = await this.#restorer?.()
    } catch (error) {
      console.error(`termkeep emulator ${this.key}: loading its revision failed; replaying its journal instead`, error)
    }
    if (this.#stop.signal.aborted) return
    // Records from the revision on are replayed; until the screen is back where it was it shows
    // older output (not to be settled or sent as news), as after a worker failure.
    const from = payload && payload.sequence <= this.#applied ? payload.sequence : 0
    this.#rebuildTarget = Math.max(this.#rebuildTarget, this.#applied)
    this.#sent = from
    this.#applied = from
    this.#inflight = 0
    this.#skipped = 0
    this.#released = false
    this.restores++
    this.lastUsed = Date.now()
    this.#slot = this.#pool.place(this, this.#journal, from > 0 ? payload : undefined)
    this.#startPump()
  }

  /** @internal its worker failed: a new screen in another worker, fed again from sequence 0 (the
   * journal holds every byte while the terminal lives). Listeners see sequences from 1 again. */
  rebuild(): void {
    if (this.#stop.signal.aborted || this.#released) return
    // A screen that was still replaying when its worker failed again may be what crashes it.
    if (this.rebuilding && ++this.#rebuilds >= EMULATOR_MAX_REBUILDS) {
      this.#gaveUp = true
      console.error(
        `termkeep emulator ${this.key}: its worker failed ${this.#rebuilds + 1} times while it was rebuilt; the screen stays unavailable (the output journal is intact)`,
      )
      return
    }
    this.#rebuildTarget = Math.max(this.#rebuildTarget, this.#applied)
    this.#sent = 0
    this.#applied = 0
    this.#inflight = 0
    this.#skipped = 0
    this.#wake?.()
    this.#slot = this.#pool.place(this, this.#journal)
    this.#startPump()
  }

  /** The last journal sequence the screen reflects. */
  get appliedSequence(): number {
    return this.#applied
  }

  /** Journal bytes the feed skipped because they provably scrolled out (display fast-forward). */
  get fastForwarded(): number {
    return this.#skipped
  }

  /** True while a rebuilt screen replays output its lost one had already shown. */
  get rebuilding(): boolean {
    return this.#applied < this.#rebuildTarget
  }

  /** True when the screen could not be rebuilt (EMULATOR_MAX_REBUILDS): requests fail for good. */
  get unavailable(): boolean {
    return this.#gaveUp
  }

  /** True when the screen reflects every record journaled so far. */
  get caughtUp(): boolean {
    return this.#applied === this.#journal.lastSequence
  }

  /** Called with each newly applied sequence; returns an unsubscribe function. */
  onApplied(listener: (sequence: number) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** The screen as ANSI at a known sequence, with explicit cursor position and visibility. */
  snapshot(): Promise<EmulatorSnapshot> {
    return this.request<EmulatorSnapshot>('snapshot')
  }

  /** The input modes named keys depend on (application cursor keys), as the screen has them now. */
  inputModes(): Promise<KeyModes> {
    return this.request<KeyModes>('input-modes')
  }

  /** Runs a worker-side handler (see handlers.ts) after every record sent so far is applied. A
   * released screen is rebuilt first. */
  request<T>(kind: string, payload?: unknown): Promise<T> {
    this.lastUsed = Date.now()
    if (this.#released || this.#restoring) {
      this.#requests++
      return this.#live()
        .then(() => this.request<T>(kind, payload))
        .finally(() => this.#requests--)
    }
    if (this.#slot.failure) {
      return Promise.reject(
        new TermkeepError(
          'sidecar/unavailable',
          `the screen of terminal ${this.key} is unavailable: its emulator failed (${this.#slot.failure.message}); its output is intact`,
        ),
      )
    }
    if (this.#stop.signal.aborted) return Promise.reject(new Error('emulator disposed'))
    const id = this.#pool.nextRequestId()
    this.#requests++
    return new Promise<T>((resolve, reject) => {
      this.#slot.pending.set(id, { resolve: resolve as (value: unknown) => void, reject })
      this.#slot.post({ type: 'request', key: this.key, id, kind, payload })
    }).finally(() => this.#requests--)
  }

  /** @internal the pool's observer for this emulator. */
  observe(observation: { drain(): Promise<void> } | undefined): void {
    this.#observation = observation
  }

  /** Closes the screen; an observer's drain (the display's last settle) runs first. */
  dispose(): void {
    if (this.#disposing) return
    this.#disposing = true
    const drain = this.#observation?.drain()
    if (!drain) return this.#close()
    this.#pool.track(
      drain.catch((error: unknown) => console.error(`termkeep emulator ${this.key}: drain failed`, error)).finally(() => this.#close()),
    )
  }

  #close(): void {
    if (this.#stop.signal.aborted) return
    this.#stop.abort()
    this.#wake?.()
    if (!this.#released) {
      this.#slot.emulators.delete(this.key)
      this.#slot.post({ type: 'close', key: this.key })
      this.#slot.left()
    }
    this.#release()
  }

  /** @internal the worker applied records up to `sequence`. */
  applied(sequence: number, bytes: number, skipped = this.#skipped): void {
    this.lastUsed = Date.now()
    this.#skipped = skipped
    this.#applied = sequence
    this.#inflight -= bytes
    this.#wake?.()
    for (const listener of this.#listeners) listener(sequence)
  }

  async #pump(slot: WorkerSlot, generation: number): Promise<void> {
    const signal = this.#stop.signal
    const current = () => !signal.aborted && !slot.failure && slot === this.#slot && !this.#released && generation === this.#pumps
    while (current()) {
      if (this.#inflight >= EMULATOR_MAX_INFLIGHT_BYTES) {
        await new Promise<void>((resolve) => (this.#wake = resolve))
        continue
      }
      if (this.#sent >= this.#journal.lastSequence) {
        if (this.#journal.ended || this.#journal.retired) return
        // Woken by new output: readers at the live edge (an echo on a follow stream) are served
        // first; the emulator takes the same bytes at the end of this turn.
        if ((await this.#journal.wait(this.#sent, IDLE_WAIT_MS, signal)) === 'changed') await nextTurn()
        continue
      }
      // Behind the journal: read ahead in one window, so the worker can skip text that provably
      // scrolls out (sidecar/display/fast-forward.ts); at the live edge windows stay small.
      const posted = await this.#journal.useRecords(this.#sent, EMULATOR_FAST_FORWARD_WINDOW_BYTES, (records) => {
        if (!current()) return false
        this.#post(records)
        return true
      })
      if (!posted) return
    }
  }

  #post(records: NativeRecord[]): void {
    let total = 0
    for (const r of records) if (r.kind === 'data') total += r.bytes.length
    // The records are views of a buffer the journal's other readers may share and that is reused
    // once they let go (sidecar/journal/shared-reads.ts): the worker gets a copy of its own.
    const bytes = new Uint8Array(total)
    const wire: WireRecord[] = []
    let at = 0
    for (const r of records) {
      if (r.kind === 'resize') {
        wire.push(r)
        continue
      }
      bytes.set(r.bytes, at)
      wire.push({ kind: 'data', sequence: r.sequence, start: at, end: at + r.bytes.length })
      at += r.bytes.length
    }
    this.#sent = records.at(-1)!.sequence
    this.#inflight += total
    // Even at the live edge of a running terminal more output may follow at once (a flood comes
    // in ~1 ms journal flushes, and a keeping-up feed sends each): only EOF writes everything out.
    const edge = this.#journal.ended && this.#sent >= this.#journal.lastSequence
    this.#slot.post({ type: 'records', key: this.key, bytes, records: wire, edge }, [bytes.buffer])
  }
}
