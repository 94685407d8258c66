/**
 * File change observation for `GET …/files/changes`.
 *
 * Two sources, one ordered feed per subscriber:
 * - `termkeep`: writes made through termkeep's own operations, reported by the writer through
 *   `FileChangeHub.recordWrite` right after the write completes (synchronously, so in order).
 * - `os`: what the OS watcher sees (editors, shells, builds). One recursive `fs.watch` per
 *   workspace root, shared by every subscriber of that root, because setting it up walks the tree.
 * Observations are facts about a path now (its version, or absent), not deltas; symlinks are not
 * followed, so an observation never describes anything outside the root.
 */
import { lstatSync, realpathSync, watch, type FSWatcher } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import type { FileChange } from '../../schema/wire/files.ts'
import { isInside, versionOf } from './confine.ts'

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

/** Where termkeep's own writers announce what they changed. One per sidecar. */
export class FileChangeHub {
  readonly #listeners = new Set<{ root: string; listener: Listener }>()
  readonly #watchers = new Map<string, { watcher: FSWatcher; listeners: Set<Listener> }>()

  /** Call after a write, rename or delete through termkeep has completed. */
  recordWrite(absolutePath: string): void {
    for (const { root, listener } of this.#listeners) {
      if (!isInside(root, absolutePath)) continue
      const change = observe(root, absolutePath, 'termkeep')
      if (change) listener(change)
    }
  }

  /**
   * Starts observing `root`. When this returns, both sources are active (`os` says whether the
   * OS watcher could be started; inotify limits can refuse it). `close` stops this subscriber.
   */
  subscribe(root: string, listener: Listener): { os: boolean; reason?: string; close(): void } {
    const own = { root, listener }
    this.#listeners.add(own)
    let os = true
    let reason: string | undefined
    try {
      this.#acquireWatcher(root, listener)
    } catch (error) {
      os = false
      reason = `the OS watcher is unavailable: ${(error as Error).message}`
    }
    return {
      os,
      reason,
      close: () => {
        this.#listeners.delete(own)
        if (os) this.#releaseWatcher(root, listener)
      },
    }
  }

  #acquireWatcher(root: string, listener: Listener): void {
    let entry = this.#watchers.get(root)
    if (!entry) {
      const listeners = new Set<Listener>()
      const watcher = watch(root, { recursive: true, persistent: false }, (_event, filename) => {
        if (filename === null) return
        const change = observe(root, join(root, filename.toString()), 'os')
        if (change) for (const l of listeners) l(change)
      })
      watcher.on('error', () => {
        // The root itself went away or the watch broke; subscribers keep the termkeep source.
        watcher.close()
        this.#watchers.delete(root)
      })
      entry = { watcher, listeners }
      this.#watchers.set(root, entry)
    }
    entry.listeners.add(listener)
  }

  #releaseWatcher(root: string, listener: Listener): void {
    const entry = this.#watchers.get(root)
    if (!entry) return
    entry.listeners.delete(listener)
    if (entry.listeners.size === 0) {
      entry.watcher.close()
      this.#watchers.delete(root)
    }
  }

  /** Open OS watchers (for tests and health). */
  get watchedRoots(): number {
    return this.#watchers.size
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
