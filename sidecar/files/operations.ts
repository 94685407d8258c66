/**
 * The workspace file operations. Each one opens through `openVerified` (confinement and the
 * check-then-open race live there) and reads from the verified descriptor only.
 */
import { lstat, readdir, type FileHandle } from 'node:fs/promises'
import { dirname, isAbsolute, join } from 'node:path'
import { TermkeepError } from '../../schema/errors.ts'
import { LinePager } from '../../common/line-page.ts'
import { MAX_FILE_BYTES, MAX_FILE_PAGE_BYTES, MAX_FILE_PAGE_LINES, MAX_LIST_ENTRIES, MAX_SKIPPED_LINE_BYTES } from '../../schema/limits.ts'
import type { DirectoryListing, FileBytes, FileStat, FileText } from '../../schema/wire/files.ts'
import {
  badRequest,
  displayPath,
  handlePath,
  kindOf,
  openVerified,
  resolveExisting,
  versionOf,
  notFound,
  type Opened,
  type OpenHooks,
  type Scope,
} from './confine.ts'
import { LineStarts } from './line-starts.ts'
import { OwnStateLook } from './own-state.ts'

/** Read granularity: big enough for throughput, small enough to stop soon after a page ends. */
const READ_CHUNK_BYTES = 256 * 1024

/** Where pages already read ended, per file version: the next page starts there, not at byte 0. */
const lineStarts = new LineStarts()

async function withFile<T>(scope: Scope, path: string, hooks: OpenHooks | undefined, use: (f: Opened) => Promise<T>): Promise<T> {
  const opened = await openVerified(scope, path, 'file', hooks)
  try {
    return await use(opened)
  } finally {
    await opened.handle.close()
  }
}

/** A page of UTF-8 lines (see common/line-page.ts for the exact rules). A line before the page
 * longer than `maxSkippedLine` is `too-large`: a file without newlines is refused after that many
 * bytes instead of being read to its end. */
export function readFileText(
  scope: Scope,
  path: string,
  range: { offset?: number; limit?: number } = {},
  hooks?: OpenHooks,
  maxSkippedLine = MAX_SKIPPED_LINE_BYTES,
): Promise<FileText> {
  const offset = range.offset ?? 1
  const limit = Math.min(range.limit ?? MAX_FILE_PAGE_LINES, MAX_FILE_PAGE_LINES)
  return withFile(scope, path, hooks, async ({ handle, absolutePath, stats }) => {
    const version = versionOf(stats)
    const page = await withPath(path, async () => {
      // Start at the nearest known line start at or before `offset` (paging on is then linear).
      const from = lineStarts.nearest(version, offset)
      const pager = new LinePager(offset, limit, MAX_FILE_PAGE_BYTES, from.line, from.byte, maxSkippedLine)
      const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES)
      let position = from.byte
      for (;;) {
        hooks?.signal?.throwIfAborted()
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, position)
        if (bytesRead === 0) break
        position += bytesRead
        if (!pager.push(buffer.subarray(0, bytesRead))) break
      }
      return pager.finish()
    })
    if (!page.eof) lineStarts.remember(version, page.offset + page.lines, page.nextByte)
    return {
      absolutePath,
      version,
      bytes: Number(stats.size),
      offset: page.offset,
      text: page.text,
      lines: page.lines,
      eof: page.eof,
    }
  })
}

/** Up to `length` bytes at `position` of a descriptor (fewer where the file ends first). Only the
 * bytes read are returned, so the buffer need not be zeroed first. */
export async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length)
  let filled = 0
  while (filled < length) {
    const { bytesRead } = await file.read(buffer, filled, length - filled, position + filled)
    if (bytesRead === 0) break
    filled += bytesRead
  }
  return buffer.subarray(0, filled)
}

/** A raw byte window, base64; `eof` when the window reaches the size seen at open. */
export function readBytes(
  scope: Scope,
  path: string,
  range: { offset?: number; length?: number } = {},
  hooks?: OpenHooks,
): Promise<FileBytes> {
  const offset = range.offset ?? 0
  const length = Math.min(range.length ?? MAX_FILE_PAGE_BYTES, MAX_FILE_PAGE_BYTES)
  return withFile(scope, path, hooks, async ({ handle, absolutePath, stats }) => {
    const size = Number(stats.size)
    const data = await readAt(handle, offset, Math.max(0, Math.min(length, size - offset)))
    return {
      absolutePath,
      version: versionOf(stats),
      bytes: size,
      offset,
      data: data.toString('base64'),
      eof: offset + data.length >= size,
    }
  })
}

/**
 * The whole file, at most MAX_FILE_BYTES. The size at open is checked first, and the read itself
 * stops after cap + 1 bytes, so a file growing while it is read is still refused.
 */
export function readAll(scope: Scope, path: string, hooks?: OpenHooks, cap = MAX_FILE_BYTES): Promise<FileBytes> {
  return withFile(scope, path, hooks, async ({ handle, absolutePath, stats }) => {
    if (Number(stats.size) > cap) throw tooLarge(path, cap)
    const chunks: Buffer[] = []
    let total = 0
    for (;;) {
      const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES * 4, cap + 1 - total))
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, total)
      if (bytesRead === 0) break
      chunks.push(buffer.subarray(0, bytesRead))
      total += bytesRead
      if (total > cap) throw tooLarge(path, cap)
    }
    return {
      absolutePath,
      version: versionOf(stats),
      bytes: total,
      offset: 0,
      data: Buffer.concat(chunks, total).toString('base64'),
      eof: true,
    }
  })
}

/** A URL scheme (`http:`, `file:`, `data:`…): a relative path never starts like one. */
const URL_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:/

/** The whole file at `relative`, resolved from the directory of the (canonical) base file. */
export async function readRelated(scope: Scope, path: string, relative: string, hooks?: OpenHooks): Promise<FileBytes> {
  if (relative.length === 0) throw badRequest('the relative path is empty', 'empty')
  if (relative.includes('\0')) throw badRequest('paths cannot contain NUL', 'nul')
  if (isAbsolute(relative)) throw badRequest('the related path must be relative', 'absolute')
  if (URL_SCHEME.test(relative)) throw badRequest('the related path must be a path, not a URL', 'url')
  // One look at termkeep's own state for both opens (its stats and ancestor verdicts).
  const own = hooks?.own ?? (await OwnStateLook.take())
  const base = await openVerified(scope, path, 'file', { own })
  await base.handle.close()
  return readAll(scope, join(dirname(base.absolutePath), relative), { ...hooks, own })
}

/** Identity, kind, version and size of any entry (symlinks are followed, within the scope). */
export async function stat(scope: Scope, path: string): Promise<FileStat> {
  // One look at termkeep's own state for the resolution and the open below.
  const own = await OwnStateLook.take()
  const absolutePath = await resolveExisting(scope, path, own)
  // Removed or replaced since it was resolved: gone, as a later look would find it.
  const checked = await lstat(absolutePath, { bigint: true }).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOENT' || error.code === 'ENOTDIR' ? notFound(path) : error
  })
  const kind = kindOf(checked)
  if (kind !== 'file' && kind !== 'directory') return { absolutePath, kind, version: versionOf(checked) }
  // Regular files and directories are opened and verified, so a swap cannot report outside facts.
  const opened = await openVerified(scope, path, kind, { own })
  try {
    const { stats } = opened
    return kind === 'file'
      ? { absolutePath: opened.absolutePath, kind, version: versionOf(stats), bytes: Number(stats.size) }
      : { absolutePath: opened.absolutePath, kind, version: versionOf(stats) }
  } finally {
    await opened.handle.close()
  }
}

/** Direct children in stable (code unit) name order, at most MAX_LIST_ENTRIES; termkeep's own
 * state (the data directory, the database, hard links of them) is left out as if absent. */
export async function list(scope: Scope, path: string, hooks: OpenHooks = {}, cap = MAX_LIST_ENTRIES): Promise<DirectoryListing> {
  const own = hooks.own ?? (await OwnStateLook.take())
  const opened = await openVerified(scope, path, 'directory', { ...hooks, own })
  try {
    const base = handlePath(opened)
    const dirents = await readdir(base, { withFileTypes: true })
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    const looked = await Promise.all(
      dirents.slice(0, cap).map(async (d) => {
        const kind = kindOf(d)
        if (kind !== 'file' && kind !== 'directory') return { name: d.name, kind }
        const stats = await lstat(join(base, d.name), { bigint: true }).catch(() => undefined)
        if (stats && own && (await own.isOwn(stats))) return undefined
        return kind === 'file' && stats ? { name: d.name, kind, size: Number(stats.size) } : { name: d.name, kind }
      }),
    )
    const entries = looked.filter((entry) => entry !== undefined)
    return {
      path: displayPath(scope.root, opened.absolutePath),
      absolutePath: opened.absolutePath,
      entries,
      truncated: dirents.length > cap,
    }
  } finally {
    await opened.handle.close()
  }
}

function tooLarge(path: string, limit: number): TermkeepError {
  return new TermkeepError('files/too-large', `${path} is larger than ${limit} bytes`, { path, limit })
}

/** Adds the request path to a page error raised by the pure pager. */
async function withPath<T>(path: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    if (error instanceof TermkeepError) throw new TermkeepError(error.code, `${path}: ${error.message}`, { ...error.details, path })
    throw error
  }
}
