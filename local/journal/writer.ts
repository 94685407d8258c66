/**
 * Appending to a terminal's journal files (format.ts): the keeper's one writer per terminal, and
 * the sidecar's for in-process producers (tests). Every append writes the bytes to the spool, then
 * the entries to the index, both at positions it computes itself, and only then counts them: an
 * append that fails (a full disk) changes nothing that counts, and trying it again writes the very
 * same bytes at the very same places. It returns the entries it wrote, which the keeper sends on
 * as they are.
 *
 * Writes are synchronous, to the page cache: a record is readable by any process the moment its
 * entry is written. Nothing is fsynced: the journal lives as long as its terminal, and a reboot
 * ends both.
 */
import { closeSync, mkdirSync, openSync, rmdirSync, rmSync, writeSync, writevSync } from 'node:fs'
import { emptyFile } from './remove-tree.ts'
import { dirname } from 'node:path'
import { MAX_RECORD_RAW_BYTES } from '../../schema/limits.ts'
import type { Geometry } from '../../schema/wire/common.ts'
import { DATA, encodeHeader, ENTRY_BYTES, INDEX_HEADER_BYTES, packGeometry, RESIZE, writeEntry } from './format.ts'

export interface JournalPaths {
  spool: string
  index: string
}

/** What one append added: its first sequence and its encoded entries (ENTRY_BYTES each). */
export interface Appended {
  first: number
  count: number
  entries: Buffer
}

export class JournalWriter {
  readonly paths: JournalPaths
  readonly initialSize: Geometry
  readonly startedAt: number
  readonly #start = performance.now()
  readonly #spool: number
  readonly #index: number
  #size = 0
  #last = 0
  #geometry: Geometry
  #closed = false

  /** Creates both files (mode 0600; an existing one is truncated) and writes the index header. */
  constructor(paths: JournalPaths, initialSize: Geometry, startedAt = Date.now()) {
    this.paths = paths
    this.initialSize = initialSize
    this.#geometry = initialSize
    this.startedAt = startedAt
    mkdirSync(dirname(paths.spool), { recursive: true, mode: 0o700 })
    mkdirSync(dirname(paths.index), { recursive: true, mode: 0o700 })
    this.#spool = openSync(paths.spool, 'w+', 0o600)
    try {
      this.#index = openSync(paths.index, 'w+', 0o600)
    } catch (error) {
      closeSync(this.#spool)
      throw error
    }
    try {
      writeAll(this.#index, [encodeHeader({ initialSize, startedAt })], 0)
    } catch (error) {
      this.close()
      throw error
    }
  }

  /** The last sequence written (0 before the first record). */
  get lastSequence(): number {
    return this.#last
  }

  /** Spool bytes written so far. */
  get size(): number {
    return this.#size
  }

  /** The geometry after the last Resize record (the initial size before any). */
  get geometry(): Geometry {
    return this.#geometry
  }

  /** Writes a flush as Data records (split at MAX_RECORD_RAW_BYTES). Throws when it cannot be
   * written; nothing counts then. */
  appendData(parts: readonly Uint8Array[], total: number): Appended {
    this.#check()
    const count = Math.ceil(total / MAX_RECORD_RAW_BYTES)
    const entries = Buffer.allocUnsafe(count * ENTRY_BYTES)
    const atMs = this.#now()
    for (let i = 0; i < count; i++) {
      const start = i * MAX_RECORD_RAW_BYTES
      writeEntry(entries, i * ENTRY_BYTES, {
        kind: DATA,
        offset: this.#size + start,
        length: Math.min(MAX_RECORD_RAW_BYTES, total - start),
        atMs,
      })
    }
    writeAll(this.#spool, parts, this.#size)
    writeAll(this.#index, [entries], INDEX_HEADER_BYTES + this.#last * ENTRY_BYTES)
    this.#size += total
    return this.#counted(entries, count)
  }

  /** Writes a Resize record after everything written before it. Throws when it cannot. */
  appendResize(cols: number, rows: number): Appended {
    this.#check()
    const entries = Buffer.allocUnsafe(ENTRY_BYTES)
    writeEntry(entries, 0, { kind: RESIZE, offset: this.#size, length: packGeometry(cols, rows), atMs: this.#now() })
    writeAll(this.#index, [entries], INDEX_HEADER_BYTES + this.#last * ENTRY_BYTES)
    this.#geometry = { cols, rows }
    return this.#counted(entries, 1)
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    closeSync(this.#spool)
    closeSync(this.#index)
  }

  /** Closes and removes both files (a reader that has the spool open keeps reading it), and
   * their directory with its last journal (one per session would otherwise stay behind). `empty`
   * (only once nothing reads them): emptied first, so a hard link made to them keeps no output. */
  remove({ empty = false } = {}): void {
    this.close()
    if (empty) {
      emptyFile(this.paths.spool)
      emptyFile(this.paths.index)
    }
    rmSync(this.paths.spool, { force: true })
    rmSync(this.paths.index, { force: true })
    try {
      rmdirSync(dirname(this.paths.spool))
    } catch {
      // other terminals' journals are still in it
    }
  }

  #counted(entries: Buffer, count: number): Appended {
    const first = this.#last + 1
    this.#last += count
    return { first, count, entries }
  }

  #now(): number {
    return performance.now() - this.#start
  }

  #check(): void {
    // Never write to a closed fd number: the OS may already have given it to another file.
    if (this.#closed) throw new Error(`journal ${this.paths.spool} is closed`)
  }
}

/** Writes `parts` back to back at `position`, all of it (a short write continues; an error throws). */
function writeAll(fd: number, parts: readonly Uint8Array[], position: number): void {
  const total = parts.reduce((sum, p) => sum + p.length, 0)
  let written = writevSync(fd, parts as Uint8Array[], position)
  // A short writev (rare, e.g. a signal): finish part by part.
  for (let at = 0, i = 0; written < total && i < parts.length; at += parts[i].length, i++) {
    const part = parts[i]
    let done = Math.max(0, written - at)
    while (done < part.length) {
      const n = writeSync(fd, part, done, part.length - done, position + at + done)
      done += n
      written += n
    }
  }
}
