/**
 * `follow`: a file's bytes as they are written, for a journal reader (`tail -F`, exactly).
 *
 * The follower holds the file open and keeps an offset into it. Whenever the file's directory
 * reports a change of its name (inotify through fs.watch — no polling), it syncs:
 *   1. it looks at what the path names now (lstat);
 *   2. it reads what the file it holds has beyond the offset, in chunks of at most
 *      `maxChunkBytes`, as `append` — so bytes written just before a rotation are never lost;
 *      a file now shorter than the offset, or whose bytes just before the offset are no longer
 *      the ones delivered (rewritten in place), starts over as `truncate`;
 *   3. when the path names another regular file now (rotated, atomically replaced), it opens
 *      that one — confined to the handle's root, never a FIFO or device — and starts over with
 *      `replace`. A path that is missing for a while (between a rotation's rename and create) is
 *      waited for.
 * A `truncate` or `replace` chunk restarts the content at offset 0 and may be empty (the reader
 * then knows its copy is void); `append` continues it. Each appended byte is delivered exactly
 * once and in order: chunks are contiguous from the offset, read from the held descriptor only
 * up to the size just stat'ed, and a change that lands during a sync marks it dirty for another
 * sync right after (the watch is open before the first sync, so none slips between).
 */
import { watch, type FSWatcher } from 'node:fs'
import { lstat } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { OBSERVE_MAX_FOLLOW_CHUNK_BYTES, SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import type { Opened } from '../files/confine.ts'
import { Notifier } from '../journal/notifier.ts'
import { objectOf, sameObject, type PathIdentity } from './handles.ts'
import { handleInvalid } from './observed.ts'
import { openConfined } from './roots.ts'

/** The canonical root the file must stay inside, and its canonical path and identity. */
export type FollowTarget = Pick<PathIdentity, 'root' | 'path' | 'dev' | 'ino' | 'born'>

export interface FollowChunk {
  type: 'append' | 'truncate' | 'replace'
  /** Where `bytes` start in the file (0 for truncate and replace). */
  offset: number
  bytes: Buffer
}

/** The bytes just before the offset that are compared to tell an in-place rewrite. */
const TAIL_BYTES = 64

interface Held {
  opened: Opened
  offset: number
  /** The last TAIL_BYTES delivered, ending at `offset`. */
  tail: Buffer
}

export class FileFollower {
  readonly #target: FollowTarget
  readonly #chunkBytes: number
  readonly #changed = new Notifier()
  readonly #watcher: FSWatcher
  #held: Held
  #dirty = true
  #closed = false

  private constructor(target: FollowTarget, opened: Opened, chunkBytes: number) {
    this.#target = target
    this.#chunkBytes = chunkBytes
    this.#held = { opened, offset: 0, tail: Buffer.alloc(0) }
    const name = basename(target.path)
    this.#watcher = watch(dirname(target.path), { persistent: false }, (_event, changed) => {
      if (changed === null || changed.toString() === name) this.#wake()
    })
    // A directory that vanished ends the watch; the path then stays missing, which is waited for.
    this.#watcher.on('error', () => this.#wake())
  }

  /** Opens the file a handle named; 404 `observe/handle-invalid` when it no longer is that file. */
  static async open(target: FollowTarget, maxChunkBytes = OBSERVE_MAX_FOLLOW_CHUNK_BYTES): Promise<FileFollower> {
    const opened = await openConfined(target.root, target.path, 'file')
    if (!opened || opened.absolutePath !== target.path || !sameObject(opened.stats, target)) {
      await opened?.handle.close()
      throw handleInvalid('file handle')
    }
    try {
      return new FileFollower(target, opened, Math.min(maxChunkBytes, OBSERVE_MAX_FOLLOW_CHUNK_BYTES))
    } catch (error) {
      await opened.handle.close()
      throw error
    }
  }

  /**
   * Chunks as the file changes; `null` after SSE_HEARTBEAT_MS without any (a heartbeat). Ends
   * when `signal` aborts or `stop()` holds (checked whenever `wake` fires).
   */
  async *chunks(signal: AbortSignal, stop: () => boolean = () => false, wake: readonly Notifier[] = []): AsyncGenerator<FollowChunk | null, void, void> {
    try {
      for (;;) {
        while (this.#dirty) {
          this.#dirty = false
          yield* this.#sync()
        }
        if (stop()) return
        const woke = await Notifier.any([this.#changed, ...wake], SSE_HEARTBEAT_MS, signal)
        if (woke === 'aborted' || this.#closed) return
        if (woke === 'timeout') yield null
      }
    } finally {
      await this.close()
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#watcher.close()
    await this.#held.opened.handle.close().catch(() => {})
  }

  #wake(): void {
    this.#dirty = true
    this.#changed.notify()
  }

  async *#sync(): AsyncGenerator<FollowChunk, void, void> {
    const named = await lstat(this.#target.path, { bigint: true }).catch(() => undefined)
    const moved = named === undefined || !sameObject(named, objectOf(this.#held.opened.stats))
    yield* this.#drain('append')
    if (!moved || !named?.isFile()) return
    const next = await openConfined(this.#target.root, this.#target.path, 'file')
    if (!next) return // not a regular file inside the root (yet): waited for
    if (next.absolutePath !== this.#target.path) return void (await next.handle.close())
    await this.#held.opened.handle.close().catch(() => {})
    this.#held = { opened: next, offset: 0, tail: Buffer.alloc(0) }
    yield* this.#drain('replace')
  }

  /** What the held file has beyond the offset; `first` types the first chunk (`replace` is
   * always told, even for an empty file). */
  async *#drain(first: FollowChunk['type']): AsyncGenerator<FollowChunk, void, void> {
    const held = this.#held
    const size = Number((await held.opened.handle.stat({ bigint: true })).size)
    let type = first
    let mustTell = first === 'replace'
    if (first === 'append' && (size < held.offset || !(await this.#tailIntact(held)))) {
      held.offset = 0
      held.tail = Buffer.alloc(0)
      type = 'truncate'
      mustTell = true
    }
    while (held.offset < size) {
      const wanted = Math.min(this.#chunkBytes, size - held.offset)
      const buffer = Buffer.allocUnsafe(wanted)
      const { bytesRead } = await held.opened.handle.read(buffer, 0, wanted, held.offset)
      if (bytesRead === 0) break // shrank meanwhile: the next sync tells
      const bytes = buffer.subarray(0, bytesRead)
      const offset = held.offset
      held.offset += bytesRead
      held.tail = Buffer.concat([held.tail, bytes]).subarray(-TAIL_BYTES)
      yield { type, offset: type === 'append' ? offset : 0, bytes }
      type = 'append'
      mustTell = false
    }
    if (mustTell) yield { type, offset: 0, bytes: Buffer.alloc(0) }
  }

  /** The bytes before the offset are still the ones delivered (an append-only file's are). */
  async #tailIntact(held: Held): Promise<boolean> {
    if (held.tail.length === 0) return true
    const buffer = Buffer.alloc(held.tail.length)
    const { bytesRead } = await held.opened.handle.read(buffer, 0, buffer.length, held.offset - held.tail.length)
    return bytesRead === held.tail.length && buffer.equals(held.tail)
  }
}
