/**
 * The on-disk form of a terminal's journal, written by the keeper and read by the sidecar (which
 * may be a later release: the format is versioned in the header, and a reader refuses a format it
 * does not know). Two files per terminal:
 *
 * - the spool (`<terminal>.journal`): the PTY's bytes back to back, nothing else;
 * - the index (`<terminal>.index`): a 32-byte header, then one 17-byte entry per native record,
 *   in sequence order (entry s - 1 is record s). The same 17 bytes describe a record in the
 *   keeper's notifications (local/keeper/protocol.ts), so memory, file and wire agree.
 *
 * Header: "TKJI" · u16 format · u16 initial cols · u16 initial rows · u16 0 · f64 startedAt (epoch
 * ms, wall clock) · 12 bytes 0.
 * Entry: f64 spool offset · u32 length (Data: bytes; Resize: cols << 16 | rows) · u32 arrival
 * (ms since startedAt, modulo 2^32) · u8 kind (bit 0: 0 Data, 1 Resize; bits 1–7: how many times
 * the arrival wrapped 2^32 ms, i.e. 49.7 days, so times stay exact for 17 years).
 *
 * Little-endian throughout. Appends write the spool first and the index entry after it, so an
 * entry never names bytes that are not in the spool; a torn last entry (the writer was killed
 * mid-write) is shorter than 17 bytes and ignored.
 */
import type { Geometry } from '../../schema/wire/common.ts'

export const INDEX_MAGIC = 'TKJI'
export const INDEX_FORMAT = 1
export const INDEX_HEADER_BYTES = 32
export const ENTRY_BYTES = 17
export const DATA = 0
export const RESIZE = 1
export const EPOCH_MS = 2 ** 32
const MAX_EPOCHS = 127

export interface IndexHeader {
  initialSize: Geometry
  /** Wall-clock time of the journal's start (epoch ms): time 0 of every record's arrival. */
  startedAt: number
}

export interface Entry {
  kind: typeof DATA | typeof RESIZE
  offset: number
  /** Data: byte length; Resize: cols << 16 | rows. */
  length: number
  /** Arrival: whole milliseconds since the journal's start. */
  atMs: number
}

export class JournalFormatError extends Error {
  override name = 'JournalFormatError'
}

export function encodeHeader(header: IndexHeader): Buffer {
  const buffer = Buffer.alloc(INDEX_HEADER_BYTES)
  buffer.write(INDEX_MAGIC, 0, 'latin1')
  buffer.writeUInt16LE(INDEX_FORMAT, 4)
  buffer.writeUInt16LE(header.initialSize.cols, 6)
  buffer.writeUInt16LE(header.initialSize.rows, 8)
  buffer.writeDoubleLE(header.startedAt, 12)
  return buffer
}

export function decodeHeader(buffer: Uint8Array): IndexHeader {
  const b = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength)
  if (b.length < INDEX_HEADER_BYTES || b.toString('latin1', 0, 4) !== INDEX_MAGIC) throw new JournalFormatError('not a journal index')
  const format = b.readUInt16LE(4)
  if (format !== INDEX_FORMAT) throw new JournalFormatError(`journal index format ${format}; this termkeep reads format ${INDEX_FORMAT}`)
  return { initialSize: { cols: b.readUInt16LE(6), rows: b.readUInt16LE(8) }, startedAt: b.readDoubleLE(12) }
}

/** Writes one entry at byte `at` of `buffer`. */
export function writeEntry(buffer: Buffer, at: number, entry: Entry): void {
  const ms = Math.max(0, Math.floor(entry.atMs))
  const epoch = Math.min(MAX_EPOCHS, Math.floor(ms / EPOCH_MS))
  buffer.writeDoubleLE(entry.offset, at)
  buffer.writeUInt32LE(entry.length >>> 0, at + 8)
  buffer.writeUInt32LE(ms % EPOCH_MS, at + 12)
  buffer.writeUInt8(entry.kind | (epoch << 1), at + 16)
}

export function readEntry(buffer: Buffer, at: number): Entry {
  const kindByte = buffer.readUInt8(at + 16)
  return {
    kind: (kindByte & 1) as Entry['kind'],
    offset: buffer.readDoubleLE(at),
    length: buffer.readUInt32LE(at + 8),
    atMs: (kindByte >> 1) * EPOCH_MS + buffer.readUInt32LE(at + 12),
  }
}

export const packGeometry = (cols: number, rows: number) => ((cols << 16) | rows) >>> 0
export const unpackGeometry = (packed: number): Geometry => ({ cols: packed >>> 16, rows: packed & 0xffff })
