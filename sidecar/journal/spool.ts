/**
 * The sidecar's read side of a journal's spool file (local/journal/format.ts). The keeper appends
 * to it; the sidecar reads positioned and asynchronously, each reader at its own pace (readers at
 * the same range share one read: shared-reads.ts), from a descriptor of its own.
 *
 * The descriptor stays open while any reader holds it, so retiring a journal never cuts off a
 * reader that is draining: the keeper removes the file once the terminal is released, and what is
 * open stays readable. A spool is bound to its file when the keeper has created it (`open`); a
 * terminal whose program never started has none, and nothing ever reads it.
 *
 * A journal released for good (its terminal closed) is emptied when the last holder lets go,
 * through this descriptor (the keeper may have unlinked the name by then): unlinking removes only
 * a name, and a hard link someone made to the journal (a process in the terminal can, as its
 * user) would otherwise keep the whole output outside the data directory. The descriptor is
 * opened for writing for that alone; the sidecar never writes a byte to it.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, read } from 'node:fs'

export class Spool {
  #path: string | undefined
  #fd: number | undefined
  #holders = 1 // the journal itself
  #released = false
  #closed = false
  #empty = false
  readonly #onClosed: (() => void) | undefined

  /** `onClosed` runs once the last holder let go (the in-process writer removes its files then). */
  constructor(onClosed?: () => void) {
    this.#onClosed = onClosed
  }

  get path(): string | undefined {
    return this.#path
  }

  /** Binds the spool to its file. */
  open(path: string): void {
    if (this.#fd !== undefined || this.#closed) throw new Error('spool already bound')
    this.#path = path
    this.#fd = openSync(path, 'r+')
  }

  /** Reads exactly `length` bytes at `offset` (into `buffer`, by default a new one); a short read
   * or an I/O error rejects. */
  async readAt(offset: number, length: number, buffer: Buffer = Buffer.allocUnsafe(length)): Promise<Buffer> {
    // Never touch a closed fd number: the OS may already have given it to another file.
    const fd = this.#fd
    if (this.#closed || fd === undefined) throw new Error(`spool ${this.#path ?? '(unbound)'} is closed`)
    let done = 0
    while (done < length) {
      const n = await new Promise<number>((resolve, reject) =>
        read(fd, buffer, done, length - done, offset + done, (error, bytes) => (error ? reject(error) : resolve(bytes))),
      )
      if (n === 0) throw new Error(`spool ${this.#path}: short read at ${offset + done} (wanted ${length - done} more bytes)`)
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

  /** The journal's own release: the descriptor closes once no reader holds it (`empty`: the
   * file emptied first, the terminal is gone for good). */
  release({ empty = false } = {}): void {
    if (this.#released) return
    this.#released = true
    this.#empty = empty
    this.#drop()
  }

  #drop(): void {
    if (--this.#holders > 0) return
    this.#closed = true
    if (this.#fd !== undefined) {
      if (this.#empty && fstatSync(this.#fd).isFile()) ftruncateSync(this.#fd, 0)
      closeSync(this.#fd)
    }
    this.#onClosed?.()
  }
}

export { removeSpoolTree } from '../../local/journal/remove-tree.ts'
