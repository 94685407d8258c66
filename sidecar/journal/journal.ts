/**
 * The output journal of one terminal, as the sidecar sees it: every PTY read as native Data
 * records (split at MAX_RECORD_RAW_BYTES), every resize as a Resize record, sequences 1, 2, 3…
 * Bytes live in an append-only spool file; memory holds only the index. Nothing is evicted while
 * the terminal lives.
 *
 * The keeper writes the files (local/journal/writer.ts) and tells the sidecar each record it
 * wrote, with its bytes while the sidecar keeps up (`apply`); a journal the sidecar adopts after a
 * restart is loaded from the index file first (`Journal.adopt`). In-process producers (tests) give
 * a spool path instead and append here (`appendData`, `appendResize`): the same writer then runs in
 * this process.
 *
 * Readers pull by sequence at their own pace (there is no per-reader queue and the PTY is never
 * paused for a reader). Because a reader asks for "records after N" from the one index and then
 * waits for the index to grow, replay and live delivery are the same loop: no gap, no duplicate.
 */
import { TermkeepError } from '../../schema/errors.ts'
import type { Geometry } from '../../schema/wire/common.ts'
import type { OutputItem } from '../../schema/wire/output.ts'
import { Gatherer } from '../../local/journal/gather.ts'
import { loadIndex } from '../../local/journal/reader.ts'
import { RecordIndex } from '../../local/journal/record-index.ts'
import { type Appended, JournalWriter } from '../../local/journal/writer.ts'
import { planItems, type ItemPlan, type NativeRecord, type RecordMeta } from './coalesce.ts'
import { Notifier, type WaitResult } from './notifier.ts'
import { type Lease, SharedReads, unleased } from './shared-reads.ts'
import { Spool } from './spool.ts'

/** Upper bound of bytes one read call fetches from the spool (bounds a reader's transient memory). */
const READ_WINDOW_BYTES = 1024 * 1024
/** Upper bound of records one read call looks at (Resize records carry no bytes). */
const READ_WINDOW_RECORDS = 4096
const NO_BYTES = unleased(Buffer.alloc(0))

/** A journal the keeper keeps: its files, its start and how many records it holds. */
export interface KeptJournal {
  spool: string
  index: string
  startedAt: number
  initialCols: number
  initialRows: number
  lastSequence: number
}

/** The index file beside an in-process spool (`t.journal` → `t.index`). */
const indexPathOf = (spoolPath: string) => `${spoolPath.replace(/\.journal$/, '')}.index`

export class Journal {
  readonly initialSize: Geometry
  #startedAt = Date.now()
  #index = new RecordIndex()
  readonly #spool: Spool
  /** Spool reads shared by readers at nearby offsets (shared-reads.ts). */
  readonly #reads: SharedReads
  /** In-process producers only: the writer behind appendData/appendResize. */
  readonly #writer: JournalWriter | undefined
  readonly #changes = new Notifier()
  #ended = false
  #retired = false
  readonly #gather = new Gatherer((parts, total) => this.#write(parts, total))
  /** The bytes of the last flush (one turn, ≤ 1 MiB): readers at the live edge — an echo,
   * a follower keeping up — take them from here instead of a thread-pool round trip. */
  #recent: { offset: number; parts: Uint8Array[]; length: number } = { offset: 0, parts: [], length: 0 }

  /**
   * With `spoolPath`: an in-process journal, written here (its files go away once retired and
   * let go). Without: a journal the keeper writes, bound to its files by `bind` or `adopt`.
   */
  constructor(spoolPath: string | undefined, initialSize: Geometry) {
    this.initialSize = initialSize
    if (spoolPath === undefined) {
      this.#spool = new Spool()
      this.#reads = new SharedReads(this.#spool)
      this.#writer = undefined
      return
    }
    const writer = new JournalWriter({ spool: spoolPath, index: indexPathOf(spoolPath) }, initialSize, this.#startedAt)
    this.#writer = writer
    // The last reader let go: nothing reads the files any more.
    this.#spool = new Spool(() => writer.remove({ empty: true }))
    this.#reads = new SharedReads(this.#spool)
    this.#spool.open(spoolPath)
  }

  /** A journal the keeper has kept so far (a sidecar adopting its terminals after a restart): its
   * index is read from the file, as far as the keeper said it wrote. */
  static adopt(kept: KeptJournal): Journal {
    const journal = new Journal(undefined, { cols: kept.initialCols, rows: kept.initialRows })
    journal.#index = loadIndex(kept.index, kept.lastSequence).index
    journal.bind(kept.spool, kept.startedAt)
    return journal
  }

  /** Binds a keeper's journal to its spool (at spawn: the keeper has just created it, empty). */
  bind(spoolPath: string, startedAt: number): void {
    this.#startedAt = startedAt
    this.#spool.open(spoolPath)
  }

  /** Wall-clock time of the journal's start (epoch ms): time 0 of every record's arrival time. */
  get startedAt(): number {
    return this.#startedAt
  }

  /** The last native sequence (0 before the first record). */
  get lastSequence(): number {
    return this.#index.last
  }

  /** The byte source reached EOF; no record follows. */
  get ended(): boolean {
    return this.#ended
  }

  /** Retired: new attachments are refused; attached readers drain. */
  get retired(): boolean {
    return this.#retired
  }

  get indexBytes(): number {
    return this.#index.byteSize
  }

  /** Records the keeper wrote (`count` entries from sequence `first`), with their bytes when it
   * sent them along (the Data records' bytes back to back). */
  apply(first: number, count: number, entries: Buffer, bytes?: Uint8Array): void {
    if (this.#retired) return
    if (first !== this.#index.last + 1) throw new Error(`journal: records from ${first} after ${this.#index.last}`)
    this.#index.addEntries(entries, count)
    if (bytes && bytes.length > 0) {
      let s = first
      while (!this.#index.isData(s)) s++
      this.#recent = { offset: this.#index.offset(s), parts: [bytes], length: bytes.length }
    }
    this.#changes.notify()
  }

  /** Takes PTY bytes (in-process producers); they become records at the end of this event-loop
   * turn (or now, via flush). */
  appendData(bytes: Uint8Array): void {
    if (this.#ended) throw new Error('journal: data after EOF')
    // Retired without EOF (sidecar shutdown): the spool is gone; late bytes have nowhere to go.
    if (this.#retired) return
    this.#gather.add(bytes)
  }

  /** Journals the bytes taken so far as Data records (split at MAX_RECORD_RAW_BYTES). */
  flush(): void {
    if (this.#retired) this.#gather.discard()
    else this.#gather.flush()
  }

  /** Bytes gathered elsewhere, journaled now as one flush (in-process producers). */
  appendFlushed(bytes: Uint8Array): void {
    if (this.#ended) throw new Error('journal: data after EOF')
    if (this.#retired || bytes.length === 0) return
    this.#write([bytes], bytes.length)
  }

  #write(parts: Uint8Array[], total: number): void {
    const appended = this.#local().appendData(parts, total)
    this.#index.addEntries(appended.entries, appended.count)
    this.#recent = { offset: this.#index.offset(appended.first), parts, length: total }
    this.#changes.notify()
  }

  /** Journals a Resize after every byte taken before it (in-process producers). Returns its
   * sequence. */
  appendResize(cols: number, rows: number): number {
    if (this.#ended) throw new Error('journal: resize after EOF')
    this.flush()
    const appended: Appended = this.#local().appendResize(cols, rows)
    this.#index.addEntries(appended.entries, appended.count)
    this.#changes.notify()
    return appended.first
  }

  #local(): JournalWriter {
    if (!this.#writer) throw new Error('journal: the keeper writes this journal')
    return this.#writer
  }

  /** The byte source closed (EOF). */
  end(): void {
    if (this.#ended) return
    this.flush()
    this.#ended = true
    this.#changes.notify()
  }

  /** Closed and released: the spool goes away once every attached reader has let go (`forGood`:
   * its terminal is closed, the file is emptied then; not when this sidecar only leaves it). */
  retire({ forGood = false } = {}): void {
    if (this.#retired) return
    this.flush()
    this.#retired = true
    this.#reads.clear()
    this.#spool.release({ empty: forGood })
    this.#changes.notify()
  }

  /** A reader keeps the spool readable until it releases, even across retirement. A new reader
   * of a retired journal is refused. */
  attach(): () => void {
    if (this.#retired) throw new TermkeepError('terminal/unavailable', 'the terminal was retired; its output is gone')
    return this.#spool.hold()
  }

  /** The geometry in force right after record `sequence` (scans back to the last Resize). */
  geometryAt(sequence: number): Geometry {
    for (let s = Math.min(sequence, this.#index.last); s >= 1; s--) {
      if (!this.#index.isData(s)) return this.#index.geometry(s)
    }
    return this.initialSize
  }

  /** When record `sequence` arrived: whole milliseconds since the journal's start (monotonic). */
  timeAt(sequence: number): number {
    return this.#index.time(sequence)
  }

  /** Waits until a record after `after` exists, the journal ends or retires, or the time passes. */
  wait(after: number, timeoutMs: number, signal?: AbortSignal): Promise<WaitResult> {
    return this.waitOr(after, [], timeoutMs, signal)
  }

  /** Resolves once the byte source closed (EOF), or after `timeoutMs`. */
  async untilEnded(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!this.#ended && !this.#retired && Date.now() < deadline) await this.wait(this.#index.last, deadline - Date.now())
  }

  /** `wait`, or until one of `others` fires first. */
  waitOr(after: number, others: readonly Notifier[], timeoutMs: number, signal?: AbortSignal): Promise<WaitResult> {
    if (this.#index.last > after || this.#ended || this.#retired) return Promise.resolve('changed')
    return Notifier.any([this.#changes, ...others], timeoutMs, signal)
  }

  /** Native records after `after`, up to about `maxBytes` of data (at least one record if any),
   * as consecutive views of one buffer of the caller's. */
  readRecords(after: number, maxBytes = READ_WINDOW_BYTES): Promise<NativeRecord[]> {
    return this.#records(after, maxBytes, (records) => records, true)
  }

  /** `readRecords` for a reader that is done with the bytes when `use` returns (they may be a
   * buffer shared with other readers and reused after): the hot readers, which would otherwise
   * copy every byte once more. */
  useRecords<T>(after: number, maxBytes: number, use: (records: NativeRecord[]) => T): Promise<T> {
    return this.#records(after, maxBytes, use, false)
  }

  async #records<T>(after: number, maxBytes: number, use: (records: NativeRecord[]) => T, own: boolean): Promise<T> {
    const { metas } = this.#metasAfter(after, maxBytes)
    const lease = await this.#readData(metas, (m) => m.sequence)
    try {
      const bytes = own && lease.pooled ? Buffer.from(lease.bytes) : lease.bytes
      let at = 0
      const records = metas.map((m): NativeRecord => {
        if (m.kind === 'resize') return m
        const record = { kind: 'data' as const, sequence: m.sequence, bytes: bytes.subarray(at, at + m.length) }
        at += m.length
        return record
      })
      return use(records)
    } finally {
      lease.release()
    }
  }

  /** Delivery items after `after`: adjacent Data coalesced within the item budget. */
  readItems(after: number, maxItems: number): Promise<OutputItem[]> {
    return this.usePlanned(after, maxItems, (plans, bytes) => {
      let at = 0
      return plans.map((p): OutputItem => {
        if (p.kind === 'resize') return { kind: 'resize', sequence: p.last, cols: p.cols, rows: p.rows }
        const data = bytes.subarray(at, at + p.length).toString('base64')
        at += p.length
        return { kind: 'data', sequence: p.last, data }
      })
    })
  }

  /** The items `readItems` would return, as plans plus their raw bytes back to back (Data plans in
   * order), for writers that encode straight into their own framing (watchOutput over SSE); the
   * bytes are valid only until `use` returns. */
  async usePlanned<T>(after: number, maxItems: number, use: (plans: ItemPlan[], bytes: Buffer) => T): Promise<T> {
    const { metas, cut } = this.#metasAfter(after, READ_WINDOW_BYTES)
    const plans = planItems(metas, maxItems)
    // The window may have cut the last item short; leave it for the next read so items come out
    // the same however a reader pages (only the live edge can produce a short item).
    const tail = plans.at(-1)
    if (cut && plans.length > 1 && tail?.kind === 'data' && tail.last === metas.at(-1)?.sequence) plans.pop()
    const lease = await this.#readData(plans, (p) => p.first)
    try {
      return use(plans, lease.bytes)
    } finally {
      lease.release()
    }
  }

  /** The bytes of the Data records or plans among `items`, back to back (they are consecutive in
   * the spool, from the one whose first sequence `firstOf` gives). */
  #readData<I extends RecordMeta | ItemPlan>(items: readonly I[], firstOf: (item: I) => number): Promise<Lease> {
    let start = -1
    let total = 0
    for (const item of items) {
      if (item.kind !== 'data') continue
      if (start < 0) start = this.#index.offset(firstOf(item))
      total += item.length
    }
    return total > 0 ? this.#read(start, total) : Promise.resolve(NO_BYTES)
  }

  /** Spool bytes [offset, offset + length), from the last flush when they are all in it, else
   * from a read shared with the journal's other readers (shared-reads.ts). Read-only for the
   * caller: a view, not a copy (every reader at the live edge would otherwise copy every byte
   * once more). */
  async #read(offset: number, length: number): Promise<Lease> {
    if (this.#retired) return unleased(await this.#spool.readAt(offset, length))
    const recent = this.#recent
    const from = offset - recent.offset
    if (from < 0 || from + length > recent.length) return this.#reads.read(offset, length)
    const whole =
      recent.parts.length === 1
        ? Buffer.from(recent.parts[0].buffer, recent.parts[0].byteOffset, recent.length)
        : Buffer.concat(recent.parts)
    if (recent.parts.length > 1) this.#recent = { ...recent, parts: [whole] }
    return unleased(whole.subarray(from, from + length))
  }

  /** Consecutive record metas after `after` whose data adds up to about `maxBytes`; `cut` when
   * more records follow. */
  #metasAfter(after: number, maxBytes: number): { metas: RecordMeta[]; cut: boolean } {
    const metas: RecordMeta[] = []
    let bytes = 0
    const last = this.#index.last
    for (let s = after + 1; s <= last; s++) {
      if (metas.length === READ_WINDOW_RECORDS) return { metas, cut: true }
      if (this.#index.isData(s)) {
        const length = this.#index.length(s)
        if (metas.length > 0 && bytes + length > maxBytes) return { metas, cut: true }
        bytes += length
        metas.push({ kind: 'data', sequence: s, length })
      } else {
        metas.push({ kind: 'resize', sequence: s, ...this.#index.geometry(s) })
      }
    }
    return { metas, cut: false }
  }
}
