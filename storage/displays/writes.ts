/**
 * Writing display revisions (format 2, storage/tables.ts): one revision is one transaction (one
 * `db.batch`), in this order: the new history chunks, the head events, the header, then pruning —
 * old revisions, their events, and last the history chunks that no revision left overlaps (the new
 * header is already in, so its rows are safe). A reader that finds a header finds every part of
 * it; no revision ever points at a missing row. What goes into a revision is
 * sidecar/display/persist.ts; revisions.ts reads them.
 */
import { and, count, eq, inArray, lt, lte, max, sql, type SQL } from 'drizzle-orm'
import type { BatchItem } from 'drizzle-orm/batch'
import type { PackSummary } from '../../common/display/pack.ts'
import { DISPLAY_KEEP_MS, DISPLAY_KEEP_REVISIONS } from '../tuning.ts'
import type { Cursor, InputModes, Palette } from '../../schema/wire/display.ts'
import type { Database } from '../client.ts'
import { CommitGroup } from '../commit-group.ts'
import { dataMigrations, displayChunks, displayHistory, displayRevisions } from '../tables.ts'

/** Chunk rows per INSERT statement (5–6 bound parameters each). */
const CHUNKS_PER_INSERT = 100

/** A revision's header facts besides its packing. */
export interface RevisionMeta {
  cols: number
  rows: number
  cursor: Cursor
  title: string
  alternateScreen: boolean
  palette: Palette
  inputModes: InputModes
  /** Output sequence the emulator had applied. */
  sequence: number
}

/** One revision as it is stored: its header's facts, its packing and its head events. */
export interface RevisionRecord extends PackSummary {
  meta: RevisionMeta
  /** The viewport and alternate `rows` events, verbatim. */
  head: string[]
  history: { first: number; end: number }
}

/** A history chunk to store: its rows' place and its compressed body. */
export interface StoredChunk {
  first: number
  rowCount: number
  body: Uint8Array
}

export interface RevisionWrite {
  sessionId: string
  terminalId: string
  /** The revision number: one more than the newest stored. */
  number: number
  /** The history epoch the chunks belong to (a revision number). */
  epoch: number
  origin: 'live' | 'migrated'
  now: number
  /** Emulator state for rebuilding from this revision. */
  restore: unknown
  /** A data-migration ledger entry committed with the revision. */
  ledger?: { name: string; detail: string }
  /** False: the writer knows no revision is due for pruning, so the prune statements are left out. */
  prune?: boolean
}

/** The newest revision number of a terminal, 0 when it has none. */
export async function newestRevisionNumber(db: Database, sessionId: string, terminalId: string): Promise<number> {
  const [row] = await db
    .select({ latest: max(displayRevisions.revision) })
    .from(displayRevisions)
    .where(and(eq(displayRevisions.sessionId, sessionId), eq(displayRevisions.terminalId, terminalId)))
  return row?.latest ?? 0
}

export async function hasRevisions(db: Database, sessionId: string, terminalId: string): Promise<boolean> {
  const [row] = await db
    .select({ n: count() })
    .from(displayRevisions)
    .where(and(eq(displayRevisions.sessionId, sessionId), eq(displayRevisions.terminalId, terminalId)))
  return (row?.n ?? 0) > 0
}

/** Writes one revision in one transaction, with the other revisions ready then (commit-group.ts);
 * two writers racing for the same number cannot both commit (primary key). */
export async function writeRevision(
  db: Database,
  write: RevisionWrite,
  revision: RevisionRecord,
  chunks: readonly StoredChunk[],
): Promise<void> {
  await CommitGroup.of(db).commit(revisionStatements(db, write, revision, chunks))
}

function revisionStatements(db: Database, write: RevisionWrite, revision: RevisionRecord, chunks: readonly StoredChunk[]) {
  const { sessionId, terminalId, number, epoch, now } = write
  const { meta, history } = revision
  const statements: BatchItem<'sqlite'>[] = []
  for (let i = 0; i < chunks.length; i += CHUNKS_PER_INSERT) {
    const rows = chunks
      .slice(i, i + CHUNKS_PER_INSERT)
      .map((c) => ({ sessionId, terminalId, epoch, firstRow: c.first, rowCount: c.rowCount, body: c.body }))
    // A chunk that absorbed new rows replaces its smaller self (same first row): a superset, so
    // any revision reading it finds its rows.
    statements.push(
      db
        .insert(displayHistory)
        .values(rows)
        .onConflictDoUpdate({
          target: [displayHistory.sessionId, displayHistory.terminalId, displayHistory.epoch, displayHistory.firstRow],
          set: { rowCount: sql`excluded.row_count`, body: sql`excluded.body` },
        }),
    )
  }
  for (let i = 0; i < revision.head.length; i += CHUNKS_PER_INSERT) {
    const rows = revision.head
      .slice(i, i + CHUNKS_PER_INSERT)
      .map((body, j) => ({ sessionId, terminalId, revision: number, chunk: i + j, body }))
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
      chunkCount: revision.chunks,
      origin: write.origin,
      createdAt: now,
      format: 2,
      headChunks: revision.head.length,
      historyEpoch: epoch,
      historyFirst: history.first,
      historyEnd: history.end,
      restore: write.restore ?? null,
    }),
  )
  if (write.ledger) statements.push(db.insert(dataMigrations).values(write.ledger))
  if (write.prune === false) return statements
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
      .where(
        and(
          eq(displayChunks.sessionId, sessionId),
          eq(displayChunks.terminalId, terminalId),
          inArray(displayChunks.revision, oldRevisions),
        ),
      ),
    db.delete(displayRevisions).where(old),
    db.run(sql`DELETE FROM display_history WHERE session_id = ${sessionId} AND terminal_id = ${terminalId} AND ${unreferenced}`),
  )
  return statements
}

/** A display_history chunk that no revision's rows overlap (after the revisions were pruned). */
const unreferenced = sql.raw(`NOT EXISTS (
  SELECT 1 FROM display_revisions r
  WHERE r.session_id = display_history.session_id AND r.terminal_id = display_history.terminal_id
    AND r.format = 2 AND r.history_epoch = display_history.epoch
    AND r.history_first < display_history.first_row + display_history.row_count AND r.history_end > display_history.first_row)`)

/**
 * Deletes old display revisions across terminals, in one transaction. A revision goes once it is
 * older than DISPLAY_KEEP_MS (a reader streaming it has finished) and either (a) is not among the
 * terminal's newest DISPLAY_KEEP_REVISIONS + 1, as pruning at write time would have done had a
 * newer one been written (a terminal that stopped writes none), or (b) is not the newest of a
 * closed or retired terminal, whose screen can change no more: one revision is all it needs.
 * History chunks no remaining revision overlaps go last, in the same transaction.
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
    db.run(sql`DELETE FROM display_history WHERE ${unreferenced}`),
  ])
}
