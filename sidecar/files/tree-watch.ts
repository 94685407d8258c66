/**
 * Watches a directory tree with one non-recursive `fs.watch` (inotify) per directory.
 *
 * Why not `fs.watch(root, {recursive: true})`: on Linux, Node 20 builds that by walking the whole
 * tree synchronously, which blocks the sidecar's event loop — and with it every terminal's output
 * — for seconds on a workspace with a large `node_modules`. Here the walk is asynchronous,
 * breadth-first (shallow directories, where people edit, come first) and capped at
 * MAX_WATCHED_DIRECTORIES. Symlinked directories are not followed (nothing outside the root is
 * watched) and `.git` is skipped (its internals churn on every git command and are not edits),
 * as is every directory `skip` names by identity (termkeep's own data directory: files/own-state.ts).
 */
import { watch, type BigIntStats, type FSWatcher } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import { basename, join, relative, sep } from 'node:path'
import { MAX_WATCHED_DIRECTORIES } from '../tuning.ts'

const SKIPPED = new Set(['.git'])

/** A directory (by its stats) not to watch, nor anything below it. */
export type SkipDirectory = (stats: BigIntStats) => Promise<boolean>

export class TreeWatch {
  readonly #onPath: (absolutePath: string) => void
  readonly #max: number
  readonly #root: string
  /** Directories deeper than this below the root are not watched (Infinity: all). */
  readonly #maxDepth: number
  readonly #watchers = new Map<string, FSWatcher>()
  readonly #skip: SkipDirectory | undefined
  #closed = false
  /** Directories were left unwatched because of the cap. */
  truncated = false

  private constructor(
    root: string,
    onPath: (absolutePath: string) => void,
    max: number,
    maxDepth: number,
    skip: SkipDirectory | undefined,
  ) {
    this.#root = root
    this.#skip = skip
    this.#onPath = onPath
    this.#max = max
    this.#maxDepth = maxDepth
  }

  /** Resolves once every directory (up to the cap, and `maxDepth` below the root) is watched;
   * throws if the root cannot be. */
  static async start(
    root: string,
    onPath: (absolutePath: string) => void,
    max = MAX_WATCHED_DIRECTORIES,
    maxDepth = Infinity,
    skip?: SkipDirectory,
  ): Promise<TreeWatch> {
    const tree = new TreeWatch(root, onPath, max, maxDepth, skip)
    tree.#watchDirectory(root, true)
    await tree.#addTree(root)
    return tree
  }

  get directories(): number {
    return this.#watchers.size
  }

  close(): void {
    this.#closed = true
    for (const watcher of this.#watchers.values()) watcher.close()
    this.#watchers.clear()
  }

  /** Breadth-first: watch `dir` (unless already) and every directory below it. */
  async #addTree(dir: string): Promise<void> {
    const queue = [dir]
    while (queue.length > 0 && !this.#closed) {
      const current = queue.shift()!
      if (current !== this.#root && (await this.#skipped(current))) continue
      if (!this.#watchDirectory(current, false)) return
      let entries
      try {
        entries = await readdir(current, { withFileTypes: true })
      } catch {
        continue // gone or unreadable meanwhile
      }
      for (const entry of entries) {
        const child = join(current, entry.name)
        if (entry.isDirectory() && !SKIPPED.has(entry.name) && this.#depthOf(child) <= this.#maxDepth) queue.push(child)
      }
    }
  }

  /** False when the cap is reached. A directory that vanished meanwhile counts as done. */
  #watchDirectory(dir: string, mustWork: boolean): boolean {
    if (this.#closed || this.#watchers.has(dir)) return true
    if (this.#watchers.size >= this.#max) {
      this.truncated = true
      return false
    }
    let watcher: FSWatcher
    try {
      watcher = watch(dir, { persistent: false }, (event, name) => {
        if (name === null || this.#closed) return
        const path = join(dir, name.toString())
        this.#onPath(path)
        if (event === 'rename') void this.#childRenamed(path)
      })
    } catch (error) {
      if (mustWork) throw error
      return true
    }
    watcher.on('error', () => this.#forget(dir))
    this.#watchers.set(dir, watcher)
    return true
  }

  /** A child appeared or disappeared: watch a new directory tree, forget a removed one. */
  async #childRenamed(path: string): Promise<void> {
    try {
      const stats = await lstat(path)
      if (stats.isDirectory() && !SKIPPED.has(basename(path)) && this.#depthOf(path) <= this.#maxDepth) await this.#addTree(path)
    } catch {
      this.#forget(path)
    }
  }

  async #skipped(dir: string): Promise<boolean> {
    if (!this.#skip) return false
    const stats = await lstat(dir, { bigint: true }).catch(() => undefined)
    return stats === undefined || (await this.#skip(stats))
  }

  #depthOf(dir: string): number {
    return relative(this.#root, dir).split(sep).length
  }

  #forget(dir: string): void {
    const prefix = dir + sep
    for (const [watched, watcher] of this.#watchers) {
      if (watched === dir || watched.startsWith(prefix)) {
        watcher.close()
        this.#watchers.delete(watched)
      }
    }
  }
}
