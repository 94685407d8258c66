/**
 * File change observation for `GET …/files/changes`.
 *
 * Two sources, one ordered feed per subscriber:
 * - `termkeep`: writes made through termkeep's own operations, reported by the writer through
 *   `FileChangeHub.recordWrite` right after the write completes (synchronously, so in order).
 * - `os`: what the OS watcher sees (editors, shells, builds). One TreeWatch per workspace root
 *   (tree-watch.ts), shared by every subscriber of that root, because setting it up walks the tree.
 * Observations are facts about a path now (its version, or absent), not deltas; symlinks are not
 * followed, so an observation never describes anything outside the root.
 */
import { lstatSync, realpathSync, type BigIntStats } from 'node:fs'
import { dirname, relative } from 'node:path'
import type { FileChange } from '../../schema/wire/files.ts'
import { isInside, versionOf } from './confine.ts'
import { OwnStateLook } from './own-state.ts'
import { TreeWatch } from './tree-watch.ts'

type Source = FileChange['source']
type Listener = (change: FileChange) => void

/**
 * The current fact about one path inside `root`, or undefined when the path is reached through a
 * symlinked directory that leads out of the root (nothing about outside files is ever reported).
 */
export function observe(root: string, absolutePath: string, source: Source): FileChange | undefined {
  const path = relative(root, absolutePath)
  try {
    if (!isInside(root, realpathSync(dirname(absolutePath)))) return undefined
  } catch {
    // The parent is gone too: report the path absent (it was inside by name).
  }
  try {
    return { path, absolutePath, version: versionOf(lstatSync(absolutePath, { bigint: true })), source }
  } catch {
    return { path, absolutePath, absent: true, source }
  }
}

export interface Subscription {
  /** Whether the OS watcher runs for this root. */
  os: boolean
  /** Why the OS watcher is missing or partial. */
  reason?: string
  close(): void
}

interface SharedWatch {
  tree: Promise<TreeWatch>
  listeners: Set<Listener>
}

/** Where termkeep's own writers announce what they changed, and where OS watches are shared. One per sidecar. */
export class FileChangeHub {
  readonly #listeners = new Set<{ root: string; listener: Listener }>()
  readonly #watches = new Map<string, SharedWatch>()

  /** Call after a write, rename or delete through termkeep has completed. */
  recordWrite(absolutePath: string): void {
    for (const { root, listener } of this.#listeners) {
      if (!isInside(root, absolutePath)) continue
      const change = observe(root, absolutePath, 'termkeep')
      if (change) listener(change)
    }
  }

  /**
   * Starts observing `root`. When the promise resolves, both sources are active (`os` says
   * whether the OS watcher could be started; inotify limits or a vanished root can refuse it).
   */
  async subscribe(root: string, listener: Listener): Promise<Subscription> {
    const own = { root, listener }
    this.#listeners.add(own)
    const shared = this.#shareWatch(root)
    shared.listeners.add(listener)
    try {
      const tree = await shared.tree
      const reason = tree.truncated ? `only the first ${tree.directories} directories are watched` : undefined
      return { os: true, reason, close: () => this.#release(root, shared, own) }
    } catch (error) {
      shared.listeners.delete(listener)
      return {
        os: false,
        reason: `the OS watcher is unavailable: ${(error as Error).message}`,
        close: () => this.#listeners.delete(own),
      }
    }
  }

  #shareWatch(root: string): SharedWatch {
    const existing = this.#watches.get(root)
    if (existing) return existing
    const listeners = new Set<Listener>()
    // termkeep's own data directory, if the workspace holds it, is not watched (own-state.ts).
    // One look for the watch's life: the data directory keeps its identity while this sidecar runs.
    const look = OwnStateLook.take()
    const skip = async (stats: BigIntStats) => (await look)?.isOwn(stats) ?? false
    const tree = TreeWatch.start(
      root,
      (path) => {
        const change = observe(root, path, 'os')
        if (change) for (const l of listeners) l(change)
      },
      undefined,
      undefined,
      skip,
    )
    const shared = { tree, listeners }
    this.#watches.set(root, shared)
    tree.catch(() => {
      if (this.#watches.get(root) === shared) this.#watches.delete(root)
    })
    return shared
  }

  #release(root: string, shared: SharedWatch, own: { root: string; listener: Listener }): void {
    this.#listeners.delete(own)
    shared.listeners.delete(own.listener)
    if (shared.listeners.size > 0 || this.#watches.get(root) !== shared) return
    this.#watches.delete(root)
    void shared.tree.then(
      (tree) => tree.close(),
      () => undefined,
    )
  }

  /** Roots with a running OS watch (for tests and health). */
  get watchedRoots(): number {
    return this.#watches.size
  }
}

/**
 * Drops an observation identical to the last one sent for the same path (the OS reports one
 * write as several events). Bounded: forgets everything past `max` paths.
 */
export function dedupe(max = 10_000): (change: FileChange) => boolean {
  const last = new Map<string, string>()
  return (change) => {
    const key = 'version' in change ? `${change.source}:${change.version}` : `${change.source}:absent`
    if (last.get(change.absolutePath) === key) return false
    if (last.size >= max) last.clear()
    last.set(change.absolutePath, key)
    return true
  }
}
