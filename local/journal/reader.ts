/**
 * Reading a journal's index file (format.ts) into memory: what a sidecar does for every terminal
 * it adopts from the keeper, and what tests use to check what the keeper wrote.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { decodeHeader, ENTRY_BYTES, INDEX_HEADER_BYTES, type IndexHeader, JournalFormatError } from './format.ts'
import { RecordIndex } from './record-index.ts'

/** Entries read per read(2) while loading (bounds the transient buffer). */
const LOAD_CHUNK_ENTRIES = 64 * 1024

/**
 * The header and the first `count` entries of an index file (every whole entry when `count` is
 * undefined). A file with fewer than `count` whole entries is a JournalFormatError: the keeper
 * said it wrote them.
 */
export function loadIndex(path: string, count?: number): { header: IndexHeader; index: RecordIndex } {
  const fd = openSync(path, 'r')
  try {
    const size = fstatSync(fd).size
    const head = Buffer.alloc(INDEX_HEADER_BYTES)
    if (readSync(fd, head, 0, INDEX_HEADER_BYTES, 0) < INDEX_HEADER_BYTES) throw new JournalFormatError(`${path}: no header`)
    const header = decodeHeader(head)
    const whole = Math.floor((size - INDEX_HEADER_BYTES) / ENTRY_BYTES)
    const wanted = count ?? whole
    if (wanted > whole) throw new JournalFormatError(`${path} holds ${whole} records, ${wanted} expected`)
    const index = new RecordIndex()
    const buffer = Buffer.allocUnsafe(Math.min(wanted, LOAD_CHUNK_ENTRIES) * ENTRY_BYTES)
    for (let done = 0; done < wanted; ) {
      const n = Math.min(LOAD_CHUNK_ENTRIES, wanted - done)
      const bytes = n * ENTRY_BYTES
      let got = 0
      while (got < bytes) {
        const r = readSync(fd, buffer, got, bytes - got, INDEX_HEADER_BYTES + done * ENTRY_BYTES + got)
        if (r === 0) throw new JournalFormatError(`${path}: short read`)
        got += r
      }
      index.addEntries(buffer, n)
      done += n
    }
    return { header, index }
  } finally {
    closeSync(fd)
  }
}
