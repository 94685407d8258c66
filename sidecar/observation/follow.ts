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
 * The watch is on the directory's inode, so a directory itself rotated (`mv sessions sessions.old;
 * mkdir sessions`) or missing would leave it deaf: every sync — and every heartbeat, which syncs
 * too — first looks at the directory (one stat) and, when it is another one now or missing,
 * watches the new one, or the nearest existing ancestor until it is back.
 * A `truncate` or `replace` chunk restarts the content at offset 0 and may be empty (the reader
 * then knows its copy is void); `append` continues it. Each appended byte is delivered exactly
 * once and in order: chunks are contiguous from the offset, read from the held descriptor only
 * up to the size just stat'ed, and a change that lands during a sync marks it dirty for another
 * sync right after (the watch is open before the first sync, so none slips between).
 *
 * Every chunk says which file it came from and the bytes it ends with, from which the route mints
 * the reader's cursor (cursor.ts). `resume` starts from such a point instead of offset 0: the
 * path names the file the reader had, long enough and with the same bytes before the offset →
 * `append` from there; the same file cut shorter or rewritten in place → `truncate`; another
 * file (rotated, replaced) → `replace`; nothing regular there yet → waited for, then `replace`.
 * Bytes the old file got after the cursor and before a rotation cannot be told then: the path no
 * longer leads to that file.
 */
import { watch, type FSWatcher } from 'node:fs'
import type { BigIntStats } from 'node:fs'
import { lstat, stat } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { OBSERVE_MAX_FOLLOW_CHUNK_BYTES, SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import type { Opened } from '../files/confine.ts'
import { readAt } from '../files/operations.ts'
import { Notifier } from '../journal/notifier.ts'
import type { ResumePoint } from './cursor.ts'
import { objectOf, sameObject, type ObjectIdentity, type PathIdentity } from './handles.ts'
import { handleInvalid } from './observed.ts'
import { openConfined } from './roots.ts'

/** The canonical root the file must stay inside, and its canonical path and identity. */
export type FollowTarget = Pick<PathIdentity, 'root' | 'path' | 'dev' | 'ino' | 'born'>

export interface FollowChunk {
  type: 'append' | 'truncate' | 'replace'
  /** Where `bytes` start in the file (0 for truncate and replace). */
  offset: number
  bytes: Buffer
  /** The file the bytes came from. */
  file: ObjectIdentity
  /** The last FOLLOW_TAIL_BYTES of the content up to the chunk's end (the reader's cursor). */
  tail: Buffer
}

/** The bytes just before the offset that are compared to tell an in-place rewrite. */
export const FOLLOW_TAIL_BYTES = 64

interface Held {
  opened: Opened
  offset: number
  /** The last FOLLOW_TAIL_BYTES delivered, ending at `offset`. */
  tail: Buffer
}

export class FileFollower {
  readonly #target: FollowTarget
  readonly #chunkBytes: number
  readonly #changed = new Notifier()
  /** What is watched: the file's directory (by identity), or an ancestor while it is missing. */
  #watch: { watcher: FSWatcher; dir: string; identity: BigIntStats } | undefined
  /** Undefined while the path names no regular file (a resumed follow after a rotation). */
  #held: Held | undefined
  /** How the next chunk from the held file is typed when it restarts the content. */
  #start: FollowChunk['type']
  #dirty = true
  #closed = false

  private constructor(target: FollowTarget, held: Held | undefined, start: FollowChunk['type'], chunkBytes: number) {
    this.#target = target
    this.#chunkBytes = Math.min(chunkBytes, OBSERVE_MAX_FOLLOW_CHUNK_BYTES)
    this.#held = held
    this.#start = start
  }

  /** Watches the file's directory unless it already is (the same directory), else the nearest
   * existing ancestor; true when it moved the watch. */
  async #rewatch(): Promise<boolean> {
    const parent = dirname(this.#target.path)
    const current = await stat(parent, { bigint: true }).catch(() => undefined)
    const watched = this.#watch
    if (watched && watched.dir === parent && current && sameObject(current, objectOf(watched.identity))) return false
    for (let dir = parent; ; dir = dirname(dir)) {
      const identity = dir === parent ? current : await stat(dir, { bigint: true }).catch(() => undefined)
      if (identity?.isDirectory() && this.#watchAt(dir, identity, dir === parent)) return true
      if (dir === dirname(dir)) return true // nothing to watch at all: heartbeats still look
    }
  }

  /** False when `dir` cannot be watched (gone meanwhile). */
  #watchAt(dir: string, identity: BigIntStats, isParent: boolean): boolean {
    const name = basename(this.#target.path)
    let watcher: FSWatcher
    try {
      // An ancestor is watched for any change: the directory coming back is one.
      watcher = watch(dir, { persistent: false }, (_event, changed) => {
        if (!isParent || changed === null || changed.toString() === name) this.#wake()
      })
    } catch {
      return false
    }
    if (this.#closed) return (void watcher.close(), true)
    // A directory that vanished ends the watch; the next sync watches what is there instead.
    watcher.on('error', () => this.#wake())
    this.#watch?.watcher.close()
    this.#watch = { watcher, dir, identity }
    return true
  }

  /** Opens the file a handle named; 404 `observe/handle-invalid` when it no longer is that file. */
  static async open(target: FollowTarget, maxChunkBytes = OBSERVE_MAX_FOLLOW_CHUNK_BYTES): Promise<FileFollower> {
    const opened = await openConfined(target.root, target.path, 'file')
    if (!opened || opened.absolutePath !== target.path || !sameObject(opened.stats, target)) {
      await opened?.handle.close()
      throw handleInvalid('file handle')
    }
    return FileFollower.#create(target, { opened, offset: 0, tail: Buffer.alloc(0) }, 'append', maxChunkBytes)
  }

  /** Follows the file a handle's path names now, from where a reader's cursor says it stopped. */
  static async resume(target: FollowTarget, point: ResumePoint, maxChunkBytes = OBSERVE_MAX_FOLLOW_CHUNK_BYTES): Promise<FileFollower> {
    const opened = await openConfined(target.root, target.path, 'file')
    if (!opened || opened.absolutePath !== target.path) {
      await opened?.handle.close()
      return FileFollower.#create(target, undefined, 'replace', maxChunkBytes)
    }
    if (!point.isFile(objectOf(opened.stats)))
      return FileFollower.#create(target, { opened, offset: 0, tail: Buffer.alloc(0) }, 'replace', maxChunkBytes)
    const tail = await readAt(opened.handle, Math.max(0, point.offset - FOLLOW_TAIL_BYTES), Math.min(point.offset, FOLLOW_TAIL_BYTES))
    // Short of the offset (cut), or other bytes before it (rewritten): the reader starts over.
    const intact =
      Number(opened.stats.size) >= point.offset && tail.length === Math.min(point.offset, FOLLOW_TAIL_BYTES) && point.isTail(tail)
    const held = intact ? { opened, offset: point.offset, tail } : { opened, offset: 0, tail: Buffer.alloc(0) }
    return FileFollower.#create(target, held, intact ? 'append' : 'truncate', maxChunkBytes)
  }

  static async #create(
    target: FollowTarget,
    held: Held | undefined,
    start: FollowChunk['type'],
    maxChunkBytes: number,
  ): Promise<FileFollower> {
    try {
      const follower = new FileFollower(target, held, start, maxChunkBytes)
      await follower.#rewatch() // before the first sync: no change slips between
      return follower
    } catch (error) {
      await held?.opened.handle.close()
      throw error
    }
  }

  /**
   * Chunks as the file changes; `null` after `heartbeatMs` without any (a heartbeat, which also
   * syncs). Ends when `signal` aborts or `stop()` holds (checked whenever `wake` fires).
   */
  async *chunks(
    signal: AbortSignal,
    stop: () => boolean = () => false,
    wake: readonly Notifier[] = [],
    heartbeatMs = SSE_HEARTBEAT_MS,
  ): AsyncGenerator<FollowChunk | null, void, void> {
    try {
      for (;;) {
        while (this.#dirty) {
          this.#dirty = false
          yield* this.#sync()
        }
        if (stop()) return
        const woke = await Notifier.any([this.#changed, ...wake], heartbeatMs, signal)
        if (woke === 'aborted' || this.#closed) return
        if (woke === 'timeout') {
          this.#dirty = true // the cheap look: a directory rotated under the watch is found here
          yield null
        }
      }
    } finally {
      await this.close()
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#watch?.watcher.close()
    await this.#held?.opened.handle.close().catch(() => {})
  }

  #wake(): void {
    this.#dirty = true
    this.#changed.notify()
  }

  async *#sync(): AsyncGenerator<FollowChunk, void, void> {
    await this.#rewatch()
    const named = await lstat(this.#target.path, { bigint: true }).catch(() => undefined)
    const held = this.#held
    const moved = held === undefined || named === undefined || !sameObject(named, objectOf(held.opened.stats))
    if (held) yield* this.#drain(held, this.#take())
    if (!moved || !named?.isFile()) return
    const next = await openConfined(this.#target.root, this.#target.path, 'file')
    if (!next) return // not a regular file inside the root (yet): waited for
    if (next.absolutePath !== this.#target.path) return void (await next.handle.close())
    await held?.opened.handle.close().catch(() => {})
    this.#held = { opened: next, offset: 0, tail: Buffer.alloc(0) }
    this.#start = 'append'
    yield* this.#drain(this.#held, 'replace')
  }

  /** The type the next drain starts with (a resumed follow's first one may restart the content). */
  #take(): FollowChunk['type'] {
    const start = this.#start
    this.#start = 'append'
    return start
  }

  /** What the held file has beyond the offset; `first` types the first chunk (`truncate` and
   * `replace` are always told, even for an empty file). */
  async *#drain(held: Held, first: FollowChunk['type']): AsyncGenerator<FollowChunk, void, void> {
    const size = Number((await held.opened.handle.stat({ bigint: true })).size)
    const file = objectOf(held.opened.stats)
    let type = first
    let mustTell = first !== 'append'
    if (first === 'append' && (size < held.offset || !(await this.#tailIntact(held)))) {
      held.offset = 0
      held.tail = Buffer.alloc(0)
      type = 'truncate'
      mustTell = true
    }
    while (held.offset < size) {
      const bytes = await readAt(held.opened.handle, held.offset, Math.min(this.#chunkBytes, size - held.offset))
      if (bytes.length === 0) break // shrank meanwhile: the next sync tells
      const offset = held.offset
      held.offset += bytes.length
      held.tail = Buffer.concat([held.tail, bytes]).subarray(-FOLLOW_TAIL_BYTES)
      yield { type, offset: type === 'append' ? offset : 0, bytes, file, tail: held.tail }
      type = 'append'
      mustTell = false
    }
    if (mustTell) yield { type, offset: 0, bytes: Buffer.alloc(0), file, tail: held.tail }
  }

  /** The bytes before the offset are still the ones delivered (an append-only file's are). */
  async #tailIntact(held: Held): Promise<boolean> {
    if (held.tail.length === 0) return true
    return (await readAt(held.opened.handle, held.offset - held.tail.length, held.tail.length)).equals(held.tail)
  }
}
