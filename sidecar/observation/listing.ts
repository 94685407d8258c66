/**
 * Bounded discovery below a directory handle: regular files with one of the given extensions, at
 * most `maxDepth` directories down, listed oldest modification first (ties by path) so that
 * `entries.at(-1)` is the newest. When `maxEntries` or the summed `maxBytes` cannot hold them all,
 * the newest are kept and the listing says `truncated` (as it does when the walk itself hit
 * OBSERVE_MAX_LIST_SCANNED). Symlinks are not followed; every directory is opened verified inside
 * the handle's root and read through its descriptor, so a component swapped for a symlink during
 * the walk cannot lead the listing out. termkeep's own state (files/own-state.ts) is left out of
 * the walk by identity: its directories are not entered, its files (and hard links of them) are
 * not listed.
 *
 * `watchDirectory` is the same listing as a stream: the current snapshot, then a new one after
 * each change (inotify on every directory it lists, settled for OBSERVE_WATCH_SETTLE_MS) whenever
 * it differs — handles are deterministic, so an unchanged listing compares equal.
 */
import type { BigIntStats } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import { pseudoFilesystem } from '../files/pseudo-fs.ts'
import { join, relative } from 'node:path'
import { SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import { OBSERVE_MAX_LIST_SCANNED, OBSERVE_MAX_WATCHED_DIRECTORIES, OBSERVE_WATCH_SETTLE_MS } from '../tuning.ts'
import type { DirectoryListing, Handle, ListOptions } from '../../schema/wire/observation.ts'
import { handlePath } from '../files/confine.ts'
import { OwnStateLook } from '../files/own-state.ts'
import { TreeWatch } from '../files/tree-watch.ts'
import type { SseEvent } from '../../common/sse.ts'
import { Notifier } from '../journal/notifier.ts'
import { objectOf, type ObjectIdentity, type PathIdentity } from './handles.ts'
import type { ObservedTerminal } from './observed.ts'
import { mintPath, openConfined, withHandle } from './roots.ts'
import { watching } from './watchers.ts'

interface Candidate {
  path: string
  relativePath: string
  size: number
  mtimeMs: number
  identity: ObjectIdentity
}

async function discover(root: PathIdentity, options: ListOptions, signal?: AbortSignal): Promise<{ found: Candidate[]; cut: boolean }> {
  const found: Candidate[] = []
  let scanned = 0
  let cut = false
  const own = await OwnStateLook.take()
  const visit = async (dir: string, depth: number): Promise<void> => {
    const opened = await openConfined(root.root, dir, 'directory', own)
    if (!opened) return // gone, not inside any more, or termkeep's own
    try {
      const base = handlePath(opened)
      const entries = await readdir(base, { withFileTypes: true }).catch(() => [])
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      for (const entry of entries) {
        signal?.throwIfAborted()
        if (++scanned > OBSERVE_MAX_LIST_SCANNED) return void (cut = true)
        const path = join(opened.absolutePath, entry.name)
        if (entry.isDirectory()) {
          if (depth < options.maxDepth) await visit(path, depth + 1)
          if (cut) return
        } else if (entry.isFile() && options.extensions.some((extension) => entry.name.endsWith(extension))) {
          // Looked up through the directory's descriptor: the name is not resolved again.
          const stats = await lstat(join(base, entry.name), { bigint: true }).catch(() => undefined)
          if (!stats?.isFile() || (own && (await own.isOwn(stats)))) continue
          // A file mounted over this name from another filesystem (a bind mount) may be a pseudo one.
          if (stats.dev !== opened.stats.dev && (await pseudoFilesystem(join(base, entry.name), stats.dev).catch(() => 'unknown'))) continue
          const mtimeMs = Number(stats.mtimeMs)
          found.push({ path, relativePath: relative(root.path, path), size: Number(stats.size), mtimeMs, identity: objectOf(stats) })
        }
      }
    } finally {
      await opened.handle.close()
    }
  }
  await visit(root.path, 0)
  return { found, cut }
}

/** Pure: oldest first, ties by path; the newest that fit the limits, and whether some did not. */
export function selectNewest<T extends { relativePath: string; size: number; mtimeMs: number }>(
  found: readonly T[],
  maxEntries: number,
  maxBytes: number,
): { kept: T[]; dropped: boolean } {
  const ordered = [...found].sort(
    (a, b) => a.mtimeMs - b.mtimeMs || (a.relativePath < b.relativePath ? -1 : a.relativePath > b.relativePath ? 1 : 0),
  )
  let count = 0
  let bytes = 0
  let from = ordered.length
  while (from > 0) {
    const next = ordered[from - 1]
    if (count + 1 > maxEntries || bytes + next.size > maxBytes) break
    count++
    bytes += next.size
    from--
  }
  return { kept: ordered.slice(from), dropped: from > 0 }
}

async function listing(view: ObservedTerminal, root: PathIdentity, options: ListOptions, signal?: AbortSignal): Promise<DirectoryListing> {
  const { found, cut } = await discover(root, options, signal)
  const { kept, dropped } = selectNewest(found, options.maxEntries, options.maxBytes)
  return {
    entries: kept.map((file) => ({
      handle: mintPath(view, 'f', { path: file.path, ...file.identity, root: root.root, base: root.base }),
      relativePath: file.relativePath,
      size: file.size,
      modifiedAt: new Date(file.mtimeMs).toISOString(),
    })),
    truncated: cut || dropped,
  }
}

export async function listDirectory(
  view: ObservedTerminal,
  r: ListOptions & { root: Handle },
  signal?: AbortSignal,
): Promise<DirectoryListing> {
  const root = await withHandle(view, r.root, 'd', async (_opened, identity) => identity)
  return listing(view, root, r, signal)
}

/** SSE: `snapshot` events, the first at once; ends when the terminal is gone. */
export async function* watchDirectory(
  view: ObservedTerminal,
  r: ListOptions & { root: Handle },
  signal: AbortSignal,
): AsyncGenerator<SseEvent, void, void> {
  const root = await withHandle(view, r.root, 'd', async (_opened, identity) => identity)
  const release = watching(view.terminal)
  const changed = new Notifier()
  let dirty = false
  let tree: TreeWatch | undefined
  try {
    const own = await OwnStateLook.take()
    const skip = own && (async (stats: BigIntStats) => own.isOwn(stats))
    tree = await TreeWatch.start(root.path, () => ((dirty = true), changed.notify()), OBSERVE_MAX_WATCHED_DIRECTORIES, r.maxDepth, skip)
    let last = ''
    for (;;) {
      dirty = false
      const snapshot = await listing(view, root, r, signal)
      const text = JSON.stringify(snapshot)
      if (text !== last) {
        last = text
        yield { event: 'snapshot', data: snapshot }
      }
      while (!dirty) {
        if (gone(view)) return
        const woke = await Notifier.any([changed, view.terminal.changes], SSE_HEARTBEAT_MS, signal)
        if (woke === 'aborted') return
        if (woke === 'timeout') yield { comment: 'heartbeat' }
      }
      // A burst of changes (a file written in pieces) makes one snapshot.
      if ((await Notifier.any([], OBSERVE_WATCH_SETTLE_MS, signal)) === 'aborted') return
    }
  } finally {
    tree?.close()
    release()
  }
}

/** The terminal's incarnation ended: its handles mean nothing any more. */
export function gone(view: ObservedTerminal): boolean {
  return view.terminal.state === 'closed' || view.terminal.state === 'retired'
}
