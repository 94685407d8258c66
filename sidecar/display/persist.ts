/**
 * Writes display revisions to libSQL. One revision is one transaction (one `db.batch`): its chunks,
 * then its header row, then the pruning of old revisions. A reader that finds the header finds
 * every chunk; a reader never sees a half-written revision.
 *
 * `RevisionWriter` is the per-terminal writer the settle loop hands revisions to. It never queues:
 * while one write is in flight, a newer revision replaces any waiting one (the latest wins).
 */
import { and, eq, inArray, lt, lte, max, sql, type SQL } from 'drizzle-orm'
import type { BatchItem } from 'drizzle-orm/batch'
import { DISPLAY_KEEP_MS, DISPLAY_KEEP_REVISIONS } from '../../schema/limits.ts'
import { displayChunks, displayRevisions } from '../../schema/tables.ts'
import type { Database } from '../../storage/client.ts'
import { isDatabaseUnavailable } from '../../storage/unavailable.ts'
import { Retry } from '../retry.ts'
import type { EncodedRevision } from './revision.ts'

/** Chunk rows per INSERT statement (5 bound parameters each). */
const CHUNKS_PER_INSERT = 200

export interface PersistOptions {
  origin?: 'live' | 'migrated'
  /** Extra statements committed in the same transaction (the migration ledger entry). */
  also?: (db: Database) => BatchItem<'sqlite'>[]
  now?: number
}

async function latestRevision(db: Database, sessionId: string, terminalId: string): Promise<number> {
  const [row] = await db
    .select({ latest: max(displayRevisions.revision) })
    .from(displayRevisions)
    .where(and(eq(displayRevisions.sessionId, sessionId), eq(displayRevisions.terminalId, terminalId)))
  return row?.latest ?? 0
}

function revisionStatements(db: Database, sessionId: string, terminalId: string, number: number, revision: EncodedRevision, options: PersistOptions) {
  const { meta } = revision
  const now = options.now ?? Date.now()
  const statements: BatchItem<'sqlite'>[] = []
  for (let i = 0; i < revision.chunks.length; i += CHUNKS_PER_INSERT) {
    const rows = revision.chunks.slice(i, i + CHUNKS_PER_INSERT).map((body, j) => ({ sessionId, terminalId, revision: number, chunk: i + j, body }))
    statements.push(db.insert(displayChunks).values(rows))
  }
  statements.push(
    db.insert(displayRevisions).values({
      sessionId,
      terminalId,
      revision: number,
      cols: meta.cols,
      rows: meta.rows,
      cursorRow: meta.cursor.row,
      cursorCol: meta.cursor.col,
      cursorVisible: meta.cursor.visible,
      cursorStyle: meta.cursor.style,
      cursorBlink: meta.cursor.blink,
      title: meta.title,
      alternateScreen: meta.alternateScreen,
      palette: meta.palette,
      inputModes: meta.inputModes,
      sequence: meta.sequence,
      viewportRows: revision.viewportRows,
      alternateRows: revision.alternateRows,
      historyRows: revision.historyRows,
      truncated: revision.truncated,
      encodedBytes: revision.encodedBytes,
      chunkCount: revision.chunks.length,
      origin: options.origin ?? 'live',
      createdAt: now,
    }),
  )
  // Prune: keep the newest DISPLAY_KEEP_REVISIONS + 1, and anything younger than DISPLAY_KEEP_MS.
  const old: SQL | undefined = and(
    eq(displayRevisions.sessionId, sessionId),
    eq(displayRevisions.terminalId, terminalId),
    lte(displayRevisions.revision, number - DISPLAY_KEEP_REVISIONS - 1),
    lt(displayRevisions.createdAt, now - DISPLAY_KEEP_MS),
  )
  const oldRevisions = db.select({ revision: displayRevisions.revision }).from(displayRevisions).where(old)
  statements.push(
    db
      .delete(displayChunks)
      .where(and(eq(displayChunks.sessionId, sessionId), eq(displayChunks.terminalId, terminalId), inArray(displayChunks.revision, oldRevisions))),
    db.delete(displayRevisions).where(old),
  )
  statements.push(...(options.also?.(db) ?? []))
  return statements
}

/**
 * Persists one revision as the terminal's next revision number, atomically. Returns the number.
 * Two writers racing for the same number cannot both commit (primary key); the loser retries.
 */
export async function persistRevision(
  db: Database,
  sessionId: string,
  terminalId: string,
  revision: EncodedRevision,
  options: PersistOptions = {},
): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const number = (await latestRevision(db, sessionId, terminalId)) + 1
    const [first, ...rest] = revisionStatements(db, sessionId, terminalId, number, revision, options)
    try {
      await db.batch([first, ...rest])
      return number
    } catch (error) {
      if (attempt >= 2 || !/UNIQUE|PRIMARY KEY|constraint/i.test(String((error as Error)?.message ?? error))) throw error
    }
  }
}

/**
 * Deletes old display revisions across terminals, in one transaction. A revision goes once it is
 * older than DISPLAY_KEEP_MS (a reader streaming it has finished) and either (a) is not among the
 * terminal's newest DISPLAY_KEEP_REVISIONS + 1, as pruning at write time would have done had a
 * newer one been written (a terminal that stopped writes none), or (b) is not the newest of a
 * closed or retired terminal, whose screen can change no more: one revision is all it needs.
 */
export async function pruneDisplayRevisions(db: Database, now = Date.now()): Promise<void> {
  const cutoff = Math.floor(now - DISPLAY_KEEP_MS)
  const old = (r: string) =>
    sql.raw(`${r}.created_at < ${cutoff} AND ${r}.revision <= (
      SELECT max(m.revision) FROM display_revisions m WHERE m.session_id = ${r}.session_id AND m.terminal_id = ${r}.terminal_id
    ) - (CASE WHEN EXISTS (
      SELECT 1 FROM terminals t WHERE t.session_id = ${r}.session_id AND t.id = ${r}.terminal_id AND t.state IN ('closed', 'retired')
    ) THEN 1 ELSE ${DISPLAY_KEEP_REVISIONS + 1} END)`)
  await db.batch([
    db.run(sql`DELETE FROM display_chunks WHERE EXISTS (
      SELECT 1 FROM display_revisions r
      WHERE r.session_id = display_chunks.session_id AND r.terminal_id = display_chunks.terminal_id AND r.revision = display_chunks.revision
        AND ${old('r')})`),
    db.run(sql`DELETE FROM display_revisions WHERE ${old('display_revisions')}`),
  ])
}

export interface RevisionWriterOptions {
  /** First wait before a failed write is tried again; doubles up to PERSIST_RETRY_MAX_MS. */
  retryMs?: number
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
  #waiting: EncodedRevision | undefined
  #running: Promise<void> | undefined
  /** The last revision number written (0 before the first), and how many writes ran. */
  written = 0
  writes = 0
  /** Revisions handed in, and how many of them were superseded before they were written. */
  submitted = 0
  superseded = 0
  failures = 0
  lastError: unknown

  constructor(db: Database, sessionId: string, terminalId: string, options: RevisionWriterOptions = {}) {
    this.#db = db
    this.#sessionId = sessionId
    this.#terminalId = terminalId
    this.#retry = new Retry(`persisting the display of ${sessionId}/${terminalId}`, options.retryMs)
  }

  /** Hands over a revision; returns at once. */
  submit(revision: EncodedRevision): void {
    this.submitted++
    if (this.#waiting) this.superseded++
    this.#waiting = revision
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

  async #drain(): Promise<void> {
    try {
      while (this.#waiting) {
        const next = this.#waiting
        this.#waiting = undefined
        this.writes++
        try {
          this.written = await persistRevision(this.#db, this.#sessionId, this.#terminalId, next)
          this.#retry.succeeded()
        } catch (error) {
          this.lastError = error
          this.failures++
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
