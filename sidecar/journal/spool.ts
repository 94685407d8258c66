/**
 * The append-only spool file behind one journal. Appends are synchronous writes to the page
 * cache (so a record is readable by every reader the moment it is indexed, with no in-memory copy
 * kept); reads are positioned and asynchronous, one per reader, each at its own pace.
 *
 * The file stays open while any reader holds it, so retiring a journal never cuts off a reader that
 * is draining; it is emptied, then unlinked, when the last holder lets go. Emptied first because
 * unlinking removes only this name: a hard link someone made to the journal (a process in the
 * terminal can, as its user) would otherwise keep the whole output, no longer inside the data
 * directory, where nothing would know it as termkeep's (files/own-state.ts).
 */
import {
  closeSync,
  constants,
  ftruncateSync,
  fstatSync,
  mkdirSync,
  openSync,
  read,
  readdirSync,
  rmdirSync,
  rmSync,
  writeSync,
  writevSync,
} from 'node:fs'
import { dirname, join } from 'node:path'

export class Spool {
  readonly path: string
  #fd: number
  #size = 0
  #holders = 1 // the journal itself
  #released = false
  #closed = false

  constructor(path: string) {
    this.path = path
    mkdirSync(dirname(path), { recursive: true })
    this.#fd = openSync(path, 'w+', 0o600)
  }

  /** Bytes written so far; the offset the next append starts at. */
  get size(): number {
    return this.#size
  }

  /** Appends buffers in order with one write where possible; returns the offset they start at.
   * Throws on a real write failure. */
  append(parts: readonly Uint8Array[]): number {
    // Never write to a closed fd number: the OS may already have given it to another file.
    if (this.#closed || this.#released) throw new Error(`spool ${this.path} is released`)
    const offset = this.#size
    const total = parts.reduce((sum, p) => sum + p.length, 0)
    let written = writevSync(this.#fd, parts as Uint8Array[], offset)
    // A short writev (rare, e.g. a signal): finish part by part.
    for (let at = 0, i = 0; written < total && i < parts.length; at += parts[i].length, i++) {
      const part = parts[i]
      let done = Math.max(0, written - at)
      while (done < part.length) {
        const n = writeSync(this.#fd, part, done, part.length - done, offset + at + done)
        done += n
        written += n
      }
    }
    this.#size += total
    return offset
  }

  /** Reads exactly `length` bytes at `offset`; a short read or an I/O error rejects. */
  async readAt(offset: number, length: number): Promise<Buffer> {
    // Never touch a closed fd number: the OS may already have given it to another file.
    if (this.#closed) throw new Error(`spool ${this.path} is closed`)
    const buffer = Buffer.allocUnsafe(length)
    let done = 0
    while (done < length) {
      const n = await new Promise<number>((resolve, reject) =>
        read(this.#fd, buffer, done, length - done, offset + done, (error, bytes) => (error ? reject(error) : resolve(bytes))),
      )
      if (n === 0) throw new Error(`spool ${this.path}: short read at ${offset + done} (wanted ${length - done} more bytes)`)
      done += n
    }
    return buffer
  }

  /** A reader keeps the file open until it calls the returned release. */
  hold(): () => void {
    if (this.#released) throw new Error('spool already released')
    this.#holders++
    let once = false
    return () => {
      if (once) return
      once = true
      this.#drop()
    }
  }

  /** The journal's own release: the file goes away once no reader holds it. */
  release(): void {
    if (this.#released) return
    this.#released = true
    this.#drop()
  }

  #drop(): void {
    if (--this.#holders > 0) return
    this.#closed = true
    ftruncateSync(this.#fd, 0)
    closeSync(this.#fd)
    rmSync(this.path, { force: true })
    // The session's spool directory goes with its last file (one per session otherwise stayed
    // until the next start).
    try {
      rmdirSync(dirname(this.path))
    } catch {
      // other terminals' spools are still in it
    }
  }
}

/**
 * Removes a tree of spool files (an earlier sidecar's, at start), each emptied before it is
 * unlinked, as a released spool is. A name is opened without following a symlink and emptied
 * only when it is a regular file: a link planted in the spool never truncates what it points at.
 */
export function removeSpoolTree(dir: string): void {
  const entries = (() => {
    try {
      return readdirSync(dir, { withFileTypes: true })
    } catch {
      return []
    }
  })()
  for (const entry of entries) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) removeSpoolTree(path)
    else if (entry.isFile()) emptyFile(path)
  }
  rmSync(dir, { recursive: true, force: true })
}

function emptyFile(path: string): void {
  let fd: number
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return // gone, or not ours to open: removed below all the same
  }
  try {
    if (fstatSync(fd).isFile()) ftruncateSync(fd, 0)
  } finally {
    closeSync(fd)
  }
}
