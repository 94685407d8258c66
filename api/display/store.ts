/**
 * Reads persisted display revisions from libSQL: the newest header, then its chunks in pages, so
 * a 64 MiB revision is never held in memory whole. Works with the sidecar stopped.
 */
import { and, asc, desc, eq, gte } from 'drizzle-orm'
import { displayChunks, displayRevisions } from '../../schema/tables.ts'
import type { DisplayBegin, InputModes, Palette } from '../../schema/wire/display.ts'
import type { Database } from '../../storage/client.ts'

/** Chunks fetched per query (≤ 64 KiB each, so ≤ 1 MiB per page). */
const CHUNKS_PER_PAGE = 16

type Header = typeof displayRevisions.$inferSelect

/** Pure: a stored header as the `begin` event. */
export function beginOf(row: Header): DisplayBegin {
  return {
    revision: row.revision,
    origin: row.origin,
    sequence: row.sequence,
    cols: row.cols,
    rows: row.rows,
    cursor: { row: row.cursorRow, col: row.cursorCol, visible: row.cursorVisible, style: row.cursorStyle, blink: row.cursorBlink },
    title: row.title,
    alternateScreen: row.alternateScreen,
    palette: row.palette as Palette,
    inputModes: row.inputModes as InputModes,
    viewportRows: row.viewportRows,
    alternateRows: row.alternateRows,
    historyRows: row.historyRows,
    truncated: row.truncated,
    chunks: row.chunkCount,
    encodedBytes: row.encodedBytes,
    createdAt: row.createdAt,
  }
}

export async function latestRevision(db: Database, sessionId: string, terminalId: string): Promise<Header | undefined> {
  const [row] = await db
    .select()
    .from(displayRevisions)
    .where(and(eq(displayRevisions.sessionId, sessionId), eq(displayRevisions.terminalId, terminalId)))
    .orderBy(desc(displayRevisions.revision))
    .limit(1)
  return row
}

/**
 * The revision's chunk bodies in order, a page at a time. Throws if a chunk is missing (the
 * revision was pruned under a very slow reader): the transfer then ends without `end`.
 */
export async function* chunksOf(db: Database, header: Header): AsyncGenerator<string> {
  for (let next = 0; next < header.chunkCount; ) {
    const page = await db
      .select({ chunk: displayChunks.chunk, body: displayChunks.body })
      .from(displayChunks)
      .where(
        and(
          eq(displayChunks.sessionId, header.sessionId),
          eq(displayChunks.terminalId, header.terminalId),
          eq(displayChunks.revision, header.revision),
          gte(displayChunks.chunk, next),
        ),
      )
      .orderBy(asc(displayChunks.chunk))
      .limit(CHUNKS_PER_PAGE)
    for (const { chunk, body } of page) {
      if (chunk !== next) break
      yield body
      next++
    }
    if (page.length === 0 || page[page.length - 1].chunk !== next - 1) {
      throw new Error(`display revision ${header.revision} lost chunk ${next} while streaming`)
    }
  }
}
