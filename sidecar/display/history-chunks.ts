/**
 * Pure: a revision's new history rows as display_history chunks. Each chunk holds consecutive
 * rows (oldest first) with its own style table, so it reads the same whichever revision it is
 * read for; the API maps its ids into each revision's table as it streams (storage/displays/revisions.ts).
 * The newest chunk of an epoch, while small, absorbs the next rows (it is written again whole, as
 * a superset of itself), so history does not end up as one chunk per revision.
 */
import { utf8Length } from '../../schema/utf8.ts'
import { DISPLAY_HISTORY_CHUNK_BYTES } from '../../storage/tuning.ts'
import { DISPLAY_HISTORY_MERGE_BYTES } from '../tuning.ts'
import type { CellStyle, EncodedRow } from '../../schema/wire/display.ts'

/** One chunk as built: its rows' JSON (chunk-local style ids) and its style table's JSON. */
export interface HistoryChunk {
  /** Absolute row of rows[0] in its epoch. */
  first: number
  rows: string[]
  styles: string[]
  /** Style JSON → chunk-local id, to continue the table when the chunk absorbs more rows. */
  ids: Map<string, number>
  /** Its JSON's size (the merge and size limits count it). */
  bytes: number
  /** The body as stored, once built (persist.ts). */
  stored?: Uint8Array
}

export const chunkBody = (chunk: HistoryChunk) => `{"styles":[${chunk.styles.join(',')}],"rows":[${chunk.rows.join(',')}]}`

function emptyChunk(first: number): HistoryChunk {
  return { first, rows: [], styles: [], ids: new Map(), bytes: 24 }
}

function copy(chunk: HistoryChunk): HistoryChunk {
  return { first: chunk.first, rows: chunk.rows.slice(), styles: chunk.styles.slice(), ids: new Map(chunk.ids), bytes: chunk.bytes }
}

/** A row's JSON with its style ids moved from `styles` (the revision's table) into the chunk's.
 * `keys` caches each revision style's JSON (one stringify per style, not per run). */
function localRow(row: EncodedRow, styles: CellStyle[], keys: string[], chunk: HistoryChunk): { json: string; added: string[] } {
  const out = row.slice()
  const added: string[] = []
  let fresh: Map<string, number> | undefined
  for (let i = 1; i < out.length; i += 2) {
    const id = out[i] as number
    if (id === 0) continue
    const key = (keys[id] ??= JSON.stringify(styles[id] ?? {}))
    let local = chunk.ids.get(key) ?? fresh?.get(key)
    if (local === undefined) {
      local = chunk.ids.size + 1 + added.length
      added.push(key)
      ;(fresh ??= new Map()).set(key, local)
    }
    out[i] = local
  }
  return { json: JSON.stringify(out), added }
}

/**
 * Chunks for rows [first, first + rows.length). `tail` is the epoch's newest stored chunk when it
 * ends right at `first`: below DISPLAY_HISTORY_MERGE_BYTES it is continued (the result's first chunk
 * then starts at `tail.first` and replaces it).
 */
export function historyChunks(first: number, rows: EncodedRow[], styles: CellStyle[], tail?: HistoryChunk): HistoryChunk[] {
  const chunks: HistoryChunk[] = []
  const mergeable = tail && tail.first + tail.rows.length === first && tail.bytes < DISPLAY_HISTORY_MERGE_BYTES
  let chunk = mergeable ? copy(tail) : emptyChunk(first)
  const keys: string[] = []
  for (const row of rows) {
    let { json, added } = localRow(row, styles, keys, chunk)
    let cost = utf8Length(json) + 1 + added.reduce((n, s) => n + utf8Length(s) + 1, 0)
    if (chunk.rows.length > 0 && chunk.bytes + cost > DISPLAY_HISTORY_CHUNK_BYTES) {
      chunks.push(chunk)
      chunk = emptyChunk(chunk.first + chunk.rows.length)
      ;({ json, added } = localRow(row, styles, keys, chunk))
      cost = utf8Length(json) + 1 + added.reduce((n, s) => n + utf8Length(s) + 1, 0)
    }
    for (const key of added) {
      chunk.ids.set(key, chunk.ids.size + 1)
      chunk.styles.push(key)
    }
    chunk.rows.push(json)
    chunk.bytes += cost
  }
  if (chunk.rows.length > 0) chunks.push(chunk)
  return chunks
}

/** A stored chunk read back: rows oldest first, style ids resolved through `styles` (id 1 first). */
export interface StoredChunk {
  styles: CellStyle[]
  rows: EncodedRow[]
}
