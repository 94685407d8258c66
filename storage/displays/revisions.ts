/**
 * Reads persisted display revisions from libSQL: the newest header, then its `rows` events, a page
 * at a time, so a 64 MiB revision is never held in memory whole. Works with the sidecar stopped,
 * on every runtime (drizzle over @libsql/client; no Node built-ins).
 *
 * Two stored formats (storage/tables.ts). Format 1 (older deployments): every event is stored as
 * streamed. Format 2 (incremental): the viewport and alternate events are stored as streamed; the
 * history is rows shared with the terminal's other revisions, which are packed here into events
 * with the sidecar's own packer (common/display/pack.ts), continuing its style table: the events
 * come out byte for byte as the whole-revision encoder made them.
 */
import { and, asc, desc, eq, gte, lt } from 'drizzle-orm'
import { ChunkPacker, type PlannedRow } from '../../common/display/pack.ts'
import { utf8Length } from '../../schema/utf8.ts'
import { MAX_DISPLAY_BYTES, MAX_DISPLAY_EVENT_BYTES } from '../../schema/limits.ts'
import { displayChunks, displayHistory, displayRevisions } from '../tables.ts'
import type { CellStyle, DisplayBegin, EncodedRow, InputModes, Palette, RowsEvent } from '../../schema/wire/display.ts'
import type { Database } from '../client.ts'

/** Chunks fetched per query (≤ 64 KiB each, so ≤ 1 MiB per page). */
const CHUNKS_PER_PAGE = 16
/** History chunks fetched per query (≤ DISPLAY_HISTORY_CHUNK_BYTES each). */
const HISTORY_PER_PAGE = 16

export type Header = typeof displayRevisions.$inferSelect

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

/** A revision that lost a part while it was read (pruned under a very slow reader). */
const lost = (header: Header, what: string) => new Error(`display revision ${header.revision} lost ${what} while streaming`)

/** Stored events [0, count) of a revision, in order. */
async function* storedEvents(db: Database, header: Header, count: number): AsyncGenerator<string> {
  for (let next = 0; next < count; ) {
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
      .limit(Math.min(CHUNKS_PER_PAGE, count - next))
    for (const { chunk, body } of page) {
      if (chunk !== next) break
      yield body
      next++
    }
    if (page.length === 0 || page[page.length - 1].chunk !== next - 1) throw lost(header, `chunk ${next}`)
  }
}

/** The epoch's stored history rows [first, end), newest first, with their chunk's style table (the scrollback route reads a range of them). */
export async function* historyRows(
  db: Database,
  header: Header,
  first: number,
  end: number,
): AsyncGenerator<{ row: EncodedRow; styles: CellStyle[]; ids: number[] }> {
  let next = end // every row from `next` up is done
  while (next > first) {
    const page = await db
      .select({ firstRow: displayHistory.firstRow, rowCount: displayHistory.rowCount, body: displayHistory.body })
      .from(displayHistory)
      .where(
        and(
          eq(displayHistory.sessionId, header.sessionId),
          eq(displayHistory.terminalId, header.terminalId),
          eq(displayHistory.epoch, header.historyEpoch!),
          lt(displayHistory.firstRow, next),
        ),
      )
      .orderBy(desc(displayHistory.firstRow))
      .limit(HISTORY_PER_PAGE)
    if (page.length === 0) throw lost(header, `history rows below ${next}`)
    for (const chunk of page) {
      if (chunk.firstRow + chunk.rowCount < next) throw lost(header, `history rows ${chunk.firstRow + chunk.rowCount}–${next - 1}`)
      const body = JSON.parse(await inflate(chunk.body)) as { styles: CellStyle[]; rows: EncodedRow[] }
      const styles: CellStyle[] = [{}, ...body.styles]
      // The chunk's ids in the revision's table, filled as rows meet them (StyleIds.plan).
      const ids: number[] = []
      for (let i = Math.min(next, chunk.firstRow + chunk.rowCount) - 1; i >= Math.max(first, chunk.firstRow); i--) {
        yield { row: body.rows[i - chunk.firstRow], styles, ids }
      }
      next = chunk.firstRow
      if (next <= first) return
    }
  }
}

/** A stored history chunk's body (deflated JSON, storage/tables.ts), with the web platform's own
 * decompressor: the same on Node, Deno and Workers. */
async function inflate(bytes: Uint8Array): Promise<string> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream('deflate'))
  return new Response(stream).text()
}

/** The revision's style table as its head events define it: style JSON → id. */
class StyleIds {
  readonly #ids = new Map<string, number>([['{}', 0]])

  /** Ids in use, the default included. */
  get size(): number {
    return this.#ids.size
  }

  define(event: RowsEvent): void {
    event.styles.forEach((style, i) => this.#ids.set(JSON.stringify(style), event.styleBase + i))
  }

  /**
   * A stored row in this revision's ids, and the styles it uses first (in order of first use).
   * `chunkIds` caches the chunk's local → revision ids (one lookup per style, not per run).
   */
  plan(row: EncodedRow, styles: CellStyle[], chunkIds: number[]): PlannedRow {
    const out = row.slice()
    let added: CellStyle[] | undefined
    for (let i = 1; i < out.length; i += 2) {
      const local = out[i] as number
      if (local === 0) continue
      let id = chunkIds[local]
      if (id === undefined) {
        const style = styles[local] ?? {}
        const key = JSON.stringify(style)
        let known = this.#ids.get(key)
        if (known === undefined) {
          known = this.#ids.size
          this.#ids.set(key, known)
          ;(added ??= []).push(style)
        }
        id = chunkIds[local] = known
      }
      out[i] = id
    }
    return { region: 'history', row: out, styles: added ?? [] }
  }
}

/**
 * The revision's `rows` event bodies in order. Throws if a part is missing (the revision was
 * pruned under a very slow reader): the transfer then ends without `end`.
 */
export async function* chunksOf(db: Database, header: Header): AsyncGenerator<string> {
  if (header.format !== 2) {
    yield* storedEvents(db, header, header.chunkCount)
    return
  }
  const ids = new StyleIds()
  let encodedBytes = 0
  let slack = 0
  let events = 0
  for await (const body of storedEvents(db, header, header.headChunks ?? 0)) {
    const event = JSON.parse(body) as RowsEvent
    ids.define(event)
    encodedBytes += utf8Length(body)
    slack = (event.styles.length > 0 ? 1 : 0) + (event.rows.length > 0 ? 1 : 0)
    events++
    yield body
  }
  if (header.historyRows === 0) return
  // The history rows kept are the newest `history_rows` (the sidecar applied the budget); they
  // are packed at the production event limit, as the sidecar counted them.
  const out: string[] = []
  const packer = new ChunkPacker(MAX_DISPLAY_BYTES, MAX_DISPLAY_EVENT_BYTES, (body) => out.push(body), {
    encodedBytes,
    styleCount: ids.size,
    chunks: events,
    slack,
  })
  let rows = 0
  const end = header.historyEnd!
  for await (const { row, styles, ids: chunkIds } of historyRows(db, header, end - header.historyRows, end)) {
    if (!packer.add(ids.plan(row, styles, chunkIds)) || ++rows === header.historyRows) break
    yield* out.splice(0)
  }
  packer.finish()
  yield* out.splice(0)
}

/**
 * The revision as parts a decoder takes (common/display/decode.ts), without building the wire events:
 * the head events parsed, then the history rows newest first in the revision's style ids, in as
 * few parts as there are stored chunks. What a released emulator is rebuilt from (format 2 only).
 */
export async function revisionParts(db: Database, header: Header): Promise<RowsEvent[]> {
  if (header.format !== 2) throw new Error(`display revision ${header.revision} is not incremental`)
  const ids = new StyleIds()
  const parts: RowsEvent[] = []
  for await (const body of storedEvents(db, header, header.headChunks ?? 0)) {
    const event = JSON.parse(body) as RowsEvent
    ids.define(event)
    parts.push(event)
  }
  const end = header.historyEnd!
  let part: RowsEvent | undefined
  let index = 0
  let lastStyles: CellStyle[] | undefined
  for await (const { row, styles, ids: chunkIds } of historyRows(db, header, end - header.historyRows, end)) {
    // A new part per stored chunk (each has its own style table): styles stay in order of first use.
    if (styles !== lastStyles || !part) {
      part = { region: 'history', index, styleBase: ids.size, styles: [], rows: [] }
      parts.push(part)
      lastStyles = styles
    }
    const planned = ids.plan(row, styles, chunkIds)
    part.styles.push(...planned.styles)
    part.rows.push(planned.row)
    index++
  }
  return parts
}
