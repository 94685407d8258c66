/**
 * Persists display revisions, incrementally: a revision writes its header, its viewport and
 * alternate events, and only the history rows the database does not hold yet; the rows already
 * stored are shared with the revisions before it. One revision is one transaction
 * (storage/displays/writes.ts, which also prunes).
 *
 * `RevisionWriter` is the per-terminal writer the settle loop hands revisions to. It never queues:
 * while one write is in flight, a newer revision replaces any waiting one (the latest wins). It
 * remembers what the database holds of the current epoch (`stored`), which the next encode uses to
 * carry only the rows after it.
 */
import { deflateSync } from 'node:zlib'
import { utf8Length } from '../../schema/utf8.ts'
import { newestRevisionNumber, writeRevision } from '../../storage/displays/writes.ts'
import type { Database } from '../../storage/client.ts'
import { DISPLAY_KEEP_MS, DISPLAY_KEEP_REVISIONS } from '../../storage/tuning.ts'
import { isDatabaseUnavailable } from '../../storage/unavailable.ts'
import { collectAfterWork } from '../emulator/collect.ts'
import { Retry } from '../write-retry.ts'
import { chunkBody, historyChunks, type HistoryChunk } from './history-chunks.ts'
import type { EncodedRevision } from './revision.ts'

/** What the database holds of a terminal's current history epoch. */
export interface StoredHistory {
  /** The worker's epoch token, and the database epoch it was given (a revision number). */
  token: string
  epoch: number
  /** Every row before this is stored (from the epoch's first kept row on). */
  end: number
  /** The epoch's newest chunk, which may absorb the next rows. */
  tail: HistoryChunk | undefined
}

/** A revision carries fewer history rows than the database lacks (a bug, or a write that was
 * lost): it is not written; the next encode carries every row again. */
export class MissingHistoryRows extends Error {}

export interface PersistOptions {
  origin?: 'live' | 'migrated'
  /** A data-migration ledger entry committed in the same transaction. */
  ledger?: { name: string; detail: string }
  now?: number
  /** What the database holds already (the writer's memory); absent: a fresh epoch. */
  stored?: StoredHistory
  /** Emulator state for rebuilding from this revision (sidecar/emulator/restore.ts). */
  restore?: unknown
  /** The terminal's newest revision number, when the caller knows it (its only writer): saves the
   * query; a wrong one only costs a retry. */
  latest?: number
  /** False: no revision can be due for pruning (the writer knows what it wrote and when). */
  prune?: boolean
}

/** The history chunks this revision writes, and what the database holds afterwards. */
function historyPlan(
  number: number,
  revision: EncodedRevision,
  stored: StoredHistory | undefined,
): { chunks: HistoryChunk[]; after: StoredHistory } {
  const h = revision.history
  const same = stored?.token === h.token && h.end >= stored.end
  const epoch = same ? stored.epoch : number
  const start = same ? Math.max(stored.end, h.first) : h.first
  if (h.from > start)
    throw new MissingHistoryRows(`the revision carries history rows from ${h.from}, the database lacks them from ${start}`)
  const rows = h.rows.slice(start - h.from)
  const tail = same && stored.tail && stored.tail.first + stored.tail.rows.length === start ? stored.tail : undefined
  const chunks = historyChunks(start, rows, revision.styles, tail)
  const last = chunks.at(-1) ?? (same ? stored.tail : undefined)
  return { chunks, after: { token: h.token, epoch, end: h.end, tail: last } }
}

/** A chunk's stored body (storage/tables.ts: displayHistory.body); kept on the chunk for `bytesOf`. */
function deflated(chunk: HistoryChunk): Uint8Array {
  chunk.stored ??= deflateSync(chunkBody(chunk))
  return chunk.stored
}

/**
 * Persists one revision as the terminal's next revision number, atomically (in one transaction with
 * the other terminals' revisions ready at the same time: storage/commit-group.ts). Returns the number and
 * what the database now holds of the history. Two writers racing for the same number cannot both
 * commit (primary key); the loser retries.
 */
export async function persistRevision(
  db: Database,
  sessionId: string,
  terminalId: string,
  revision: EncodedRevision,
  options: PersistOptions = {},
): Promise<{ revision: number; stored: StoredHistory; bytes: number }> {
  for (let attempt = 0; ; attempt++) {
    const latest = attempt === 0 && options.latest !== undefined ? options.latest : await newestRevisionNumber(db, sessionId, terminalId)
    const number = latest + 1
    const { chunks, after } = historyPlan(number, revision, options.stored)
    const write = {
      sessionId,
      terminalId,
      number,
      epoch: after.epoch,
      origin: options.origin ?? 'live',
      now: options.now ?? Date.now(),
      restore: options.restore ?? revision.restore ?? null,
      ledger: options.ledger,
      prune: options.prune,
    } as const
    const stored = chunks.map((c) => ({ first: c.first, rowCount: c.rows.length, body: deflated(c) }))
    try {
      await writeRevision(db, write, revision, stored)
      return { revision: number, stored: after, bytes: bytesOf(revision, chunks) }
    } catch (error) {
      if (attempt >= 2 || !/UNIQUE|PRIMARY KEY|constraint/i.test(String((error as Error)?.message ?? error))) throw error
    }
  }
}

export interface RevisionWriterOptions {
  /** First wait before a failed write is tried again; doubles up to PERSIST_RETRY_MAX_MS. */
  retryMs?: number
}

/** A revision handed to the writer, with the state to store beside it. */
export interface Submission {
  revision: EncodedRevision
  restore?: unknown
}

/**
 * The per-terminal writer: at most one write in flight and one (the newest) waiting. A failed
 * write (database unreachable, read-only, full) is tried again, with backoff, until it lands or a
 * newer revision replaces it: a screen is not lost because the database blinked.
 */
export class RevisionWriter {
  readonly #db: Database
  readonly #sessionId: string
  readonly #terminalId: string
  readonly #retry: Retry
  #waiting: Submission | undefined
  #running: Promise<void> | undefined
  #stored: StoredHistory | undefined
  /** The last revision number written (0 before the first), and how many writes ran. */
  written = 0
  writes = 0
  /** Revisions handed in, and how many of them were superseded before they were written. */
  submitted = 0
  superseded = 0
  failures = 0
  /** Revisions that landed. */
  landed = 0
  /** Bytes of display data written (header fields, events, history chunks), for benchmarks. */
  bytesWritten = 0
  /** The sequence of the last revision written. */
  writtenSequence = 0
  lastError: unknown
  /** Called after each revision landed. */
  onWritten: ((revision: number, sequence: number) => void) | undefined
  /** The last revision handed over is written and carries its emulator state (a rebuild can
   * start from it). */
  restorable = false

  constructor(db: Database, sessionId: string, terminalId: string, options: RevisionWriterOptions = {}) {
    this.#db = db
    this.#sessionId = sessionId
    this.#terminalId = terminalId
    this.#retry = new Retry(`persisting the display of ${sessionId}/${terminalId}`, options.retryMs)
  }

  /** The revisions this writer wrote that pruning has not removed yet, and whether it pruned once
   * (the database may hold older ones from before it started). */
  #unpruned: Array<{ revision: number; at: number }> = []
  #prunedOnce = false

  /** Whether the next revision's write could find one to prune: a revision beyond the newest
   * DISPLAY_KEEP_REVISIONS + 1 and older than DISPLAY_KEEP_MS (what the prune statements delete).
   * Most writes find none: skipping the three statements made a typed revision's write ~2× cheaper. */
  #pruneDue(now: number): boolean {
    if (!this.#prunedOnce) return true
    const next = this.written + 1
    return this.#unpruned.some((r) => r.revision <= next - DISPLAY_KEEP_REVISIONS - 1 && r.at < now - DISPLAY_KEEP_MS)
  }

  #noteWritten(revision: number, at: number, pruned: boolean): void {
    if (pruned) {
      this.#prunedOnce = true
      this.#unpruned = this.#unpruned.filter((r) => !(r.revision <= revision - DISPLAY_KEEP_REVISIONS - 1 && r.at < at - DISPLAY_KEEP_MS))
    }
    this.#unpruned.push({ revision, at })
  }

  /** What the database holds of the history: the next encode carries only the rows after it. */
  get stored(): { token: string; from: number } | undefined {
    return this.#stored && { token: this.#stored.token, from: this.#stored.end }
  }

  /** The database epoch of the current history and the worker's token for it. */
  get epoch(): { token: string; epoch: number } | undefined {
    return this.#stored && { token: this.#stored.token, epoch: this.#stored.epoch }
  }

  /** Hands over a revision; returns at once. */
  submit(revision: EncodedRevision, restore?: unknown): void {
    this.submitted++
    this.restorable = false
    if (this.#waiting) this.superseded++
    this.#waiting = { revision, restore }
    if (this.#retry.pending) return // written when the retry comes due
    this.#running ??= this.#drain()
  }

  /** Resolves when everything handed over so far is written, or its write failed (and waits for a
   * retry): a shutdown does not wait for a database that is down. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running
  }

  /** Whether a failed revision waits to be tried again. */
  get retrying(): boolean {
    return this.#retry.pending
  }

  /** Whether a revision waits to be written (or is being written). */
  get busy(): boolean {
    return this.#running !== undefined || this.#waiting !== undefined
  }

  async #drain(): Promise<void> {
    try {
      while (this.#waiting) {
        const next = this.#waiting
        this.#waiting = undefined
        this.writes++
        try {
          const now = Date.now()
          const prune = this.#pruneDue(now)
          const { revision, stored, bytes } = await persistRevision(this.#db, this.#sessionId, this.#terminalId, next.revision, {
            stored: this.#stored,
            restore: next.restore,
            latest: this.written > 0 ? this.written : undefined,
            prune,
            now,
          })
          this.#noteWritten(revision, now, prune)
          this.#stored = stored
          this.written = revision
          this.writtenSequence = next.revision.meta.sequence
          this.bytesWritten += bytes
          this.landed++
          this.#retry.succeeded()
          if (!this.#waiting) this.restorable = next.revision.restore !== undefined && next.revision.restore !== null
          this.onWritten?.(revision, next.revision.meta.sequence)
          // A revision's history rows came from the worker as objects, were chunked and deflated:
          // garbage that V8 keeps (and the process's RSS with it) until a later burst. V8's heap
          // alone: during a flood the external memory is the flood's own buffers, which V8 frees
          // by itself; counting them forced a pair of full collections (30–600 ms each here)
          // after nearly every revision of a flood, stopping every stream the sidecar serves.
          collectAfterWork({ external: false })
        } catch (error) {
          this.lastError = error
          this.failures++
          if (error instanceof MissingHistoryRows) {
            // The next encode carries the whole history again (a new settle is forced by `failures`).
            console.error(`termkeep display ${this.#sessionId}/${this.#terminalId}: ${error.message}; writing the whole history again`)
            this.#stored = undefined
            continue
          }
          // Only a database that cannot take the write now is waited for; anything else (a bug)
          // would fail the same way forever: the next settle sends a newer screen.
          if (!isDatabaseUnavailable(error)) {
            console.error(`termkeep display ${this.#sessionId}/${this.#terminalId}: persisting a revision failed`, error)
            continue
          }
          this.#waiting ??= next
          this.#retry.failed(error, () => (this.#running ??= this.#drain()))
          return
        }
      }
    } finally {
      this.#running = undefined
    }
  }
}

/** The display data one write sent: the header's fields (≈ their JSON), the head events and the
 * history chunks (what a database that bills by the byte is sent, before its own overhead). */
function bytesOf(revision: EncodedRevision, chunks: HistoryChunk[]): number {
  let bytes = utf8Length(JSON.stringify(revision.meta)) + 160
  for (const body of revision.head) bytes += utf8Length(body)
  for (const chunk of chunks) bytes += deflated(chunk).length
  return bytes
}
