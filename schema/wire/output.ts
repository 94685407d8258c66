/**
 * The output journal contract: readOutput (a finite page) and watchOutput (SSE).
 *
 *   GET /v1/sessions/:sid/terminals/:tid/output?after=N&limit=M   → OutputPage
 *   GET /v1/sessions/:sid/terminals/:tid/output/watch?after=N     SSE (Last-Event-ID overrides after)
 *   GET /v1/sessions/:sid/terminals/:tid/output.cast               asciicast v2 (ASCIICAST_CONTENT_TYPE)
 *
 * Native records have their own sequence (1, 2, 3… per terminal): Data (one PTY read, split at
 * 48 KiB raw) or Resize. Delivery merges adjacent Data records while the item's JSON encoding stays
 * ≤ 64 KiB; an item's `sequence` is the last native record it consumed. `after` is exclusive and
 * exact for any native sequence, including one inside a delivered batch.
 *
 * watchOutput SSE events:
 *   begin        {initialSize?}   first; initialSize (geometry before the first record) when after=0
 *   data         {sequence, data} id = sequence; data is base64
 *   resize       {sequence, cols, rows} id = sequence
 *   closed       {sequence}       id = sequence; the byte source reached EOF and everything was
 *                                 delivered; ends
 *   unavailable  {}               the live resource went away before EOF; ends
 * A new attachment to a retired terminal or one from a previous sidecar generation is refused
 * with 410 `terminal/unavailable` before the stream starts; an `after` beyond the last sequence
 * with 400 `output/invalid-cursor`. Comment lines (`: heartbeat`) come every 15 s when idle.
 *
 * output.cast: the records journaled when the request arrived, as an asciicast v2 recording
 * (sidecar/journal/asciicast.ts): a header line (width and height = initialSize, timestamp = the
 * terminal's start), then `[seconds, "o", text]` per Data record (UTF-8 decoded across records)
 * and `[seconds, "r", "COLSxROWS"]` per Resize, times being the records' arrival. Streamed; a
 * retired terminal is 410 `terminal/unavailable`, an empty one a header alone.
 */
import * as v from 'valibot'
import { MAX_OUTPUT_PAGE_ITEMS } from '../limits.ts'
import { pageLimit } from './common.ts'

/** What asciinema registers for its recordings. */
export const ASCIICAST_CONTENT_TYPE = 'application/x-asciicast'

export const DataItem = v.object({ kind: v.literal('data'), sequence: v.number(), data: v.string() })
export const ResizeItem = v.object({ kind: v.literal('resize'), sequence: v.number(), cols: v.number(), rows: v.number() })
export const OutputItem = v.variant('kind', [DataItem, ResizeItem])
export type OutputItem = v.InferOutput<typeof OutputItem>

export const Size = v.object({ cols: v.number(), rows: v.number() })

export const OutputPage = v.object({
  items: v.array(OutputItem),
  /** Cursor for the next page: the last item's sequence, or `after` when there were none. */
  next: v.number(),
  /** 'closed' once the byte source reached EOF and this page delivered the rest. */
  end: v.nullable(v.picklist(['closed'])),
  /** Present when after = 0. */
  initialSize: v.optional(Size),
})
export type OutputPage = v.InferOutput<typeof OutputPage>

const Cursor = v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'after is a non-negative integer sequence'), v.transform(Number))
export const OutputQuery = v.object({
  after: v.optional(Cursor, '0'),
  limit: v.optional(pageLimit(MAX_OUTPUT_PAGE_ITEMS)),
})
export const WatchQuery = v.object({ after: v.optional(Cursor, '0') })
