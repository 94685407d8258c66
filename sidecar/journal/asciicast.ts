/**
 * A terminal's journal as an asciicast v2 recording (https://docs.asciinema.org/manual/asciicast/v2/),
 * the format `asciinema play` and `asciinema cat` read:
 *
 *   {"version":2,"width":80,"height":24,"timestamp":1700000000,"title":"…","env":{…}}   header
 *   [0.125,"o","$ ls\r\n"]                  output: the record's bytes as text
 *   [2.004,"r","100x30"]                    a Resize record
 *
 * The header's size is the journal's `initialSize`; times are the records' arrival times (seconds
 * since the journal's start, millisecond resolution). Bytes are decoded with one streaming UTF-8
 * decoder across records, so a character split across PTY reads arrives whole in the later
 * event; bytes that are not UTF-8 become U+FFFD, as in a recording asciinema makes itself.
 *
 * The export is of the records journaled when it starts (a live terminal keeps running; the
 * recording does not chase it), read window by window at the client's pace.
 */
import type { Geometry } from '../../schema/wire/common.ts'
import type { NativeRecord } from './coalesce.ts'
import type { Journal } from './journal.ts'

/** Bytes read from the spool per window (and so, roughly, per chunk of the answer). */
const CAST_WINDOW_BYTES = 256 * 1024

export interface CastMeta {
  /** Epoch ms of time 0. */
  startedAt: number
  title?: string
  env?: Record<string, string>
}

/** Pure: the header line. */
export function castHeader(size: Geometry, meta: CastMeta): string {
  const header: Record<string, unknown> = { version: 2, width: size.cols, height: size.rows, timestamp: Math.floor(meta.startedAt / 1000) }
  if (meta.title) header.title = meta.title
  if (meta.env) header.env = meta.env
  return `${JSON.stringify(header)}\n`
}

const seconds = (ms: number) => (ms / 1000).toFixed(3)

/** Turns native records, in order, into event lines; keeps the UTF-8 decoder's state between them. */
export class CastEncoder {
  readonly #decoder = new TextDecoder('utf-8', { ignoreBOM: true }) // a BOM the program printed is output too
  #lastMs = 0

  /** The event line for one record ('' when its bytes only began a character). */
  record(record: NativeRecord, atMs: number): string {
    this.#lastMs = atMs
    if (record.kind === 'resize') return `[${seconds(atMs)},"r","${record.cols}x${record.rows}"]\n`
    const text = this.#decoder.decode(record.bytes, { stream: true })
    return text === '' ? '' : `[${seconds(atMs)},"o",${JSON.stringify(text)}]\n`
  }

  /** What is left at the end: a character cut off by the end of the journal (as U+FFFD). */
  end(): string {
    const text = this.#decoder.decode()
    return text === '' ? '' : `[${seconds(this.#lastMs)},"o",${JSON.stringify(text)}]\n`
  }
}

/**
 * The recording as text chunks: the header, then one chunk of event lines per spool window. The
 * caller holds the journal (`attach()`) until the generator finishes. The first window is read
 * before the header is yielded, so a spool that cannot be read fails the request itself.
 */
export async function* castChunks(journal: Journal, meta: CastMeta): AsyncGenerator<string, void, void> {
  const until = journal.lastSequence
  const encoder = new CastEncoder()
  let cursor = 0
  let records = until > 0 ? await journal.readRecords(cursor, CAST_WINDOW_BYTES) : []
  yield castHeader(journal.initialSize, meta)
  while (records.length > 0) {
    let lines = ''
    for (const record of records) {
      if (record.sequence > until) break
      lines += encoder.record(record, journal.timeAt(record.sequence))
      cursor = record.sequence
    }
    if (lines !== '') yield lines
    records = cursor < until ? await journal.readRecords(cursor, CAST_WINDOW_BYTES) : []
  }
  const tail = encoder.end()
  if (tail !== '') yield tail
}
