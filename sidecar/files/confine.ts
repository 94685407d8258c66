/**
 * Path confinement: the only way a request path becomes something the sidecar opens.
 *
 * A request path is a selection inside a scope (the session's canonical workspace root), never
 * authority. It is resolved lexically (`..`, absolute paths), then through every symlink component
 * (realpath); by default the result must stay inside the root, otherwise `files/outside-workspace`.
 * Percent-encoding means nothing here: `%2e%2e` is a file literally named so.
 *
 * Opening closes the check-then-use race: the canonical path is opened with O_NOFOLLOW (a symlink
 * swapped in at the last component fails), then the descriptor itself is verified — same device
 * and inode as the checked entry, and (on Linux) the kernel's own path of the descriptor still
 * inside the root, which catches a directory component swapped for a symlink. A detected race
 * starts the resolution over, so the caller gets the answer a calm filesystem would give.
 *
 * termkeep's own state (own-state.ts: the data directory, the database, the secret, the journals)
 * is refused here for every caller, by the identity of the entry and of the opened descriptor and
 * its ancestors, with exactly the answer an absent path gets. So is anything on a pseudo
 * filesystem (pseudo-fs.ts: `/proc/self/environ` read here is the sidecar's own environment).
 */
import { constants, type BigIntStats } from 'node:fs'
import { lstat, open, readlink, realpath, type FileHandle } from 'node:fs/promises'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { TermkeepError } from '../../schema/errors.ts'
import type { FileKind } from '../../schema/wire/files.ts'
import { OwnStateLook } from './own-state.ts'
import { pseudoFilesystem } from './pseudo-fs.ts'

export interface Scope {
  /** Canonical (realpath) workspace root. */
  root: string
  /** Deployment setting TERMKEEP_FILES_ALLOW_OUTSIDE: reads may leave the root. Off by default. */
  allowOutside: boolean
}

/** Test seams for the race tests: called between the steps of `openVerified`. */
export interface OpenHooks {
  afterResolve?(absolutePath: string): void | Promise<void>
  beforeOpen?(absolutePath: string): void | Promise<void>
  /** After the descriptor is verified, before anything is read from it. */
  afterOpen?(absolutePath: string): void | Promise<void>
  /** The caller went away: long reads stop (a far text page scans the file up to its offset). */
  signal?: AbortSignal
  /** One look at termkeep's own state for many opens (a listing's walk); else one per open. */
  own?: OwnStateLook
}

// ── Pure ─────────────────────────────────────────────────────────────────────────────────

/** Is `target` the root or beneath it? Both must be absolute and normalized. */
export function isInside(root: string, target: string): boolean {
  if (target === root) return true
  const prefix = root.endsWith(sep) ? root : root + sep
  return target.startsWith(prefix)
}

/** The lexical target of a request path: absolute paths stand, relative ones start at the root. */
export function lexicalTarget(root: string, requested: string): string {
  if (requested.includes('\0')) throw badRequest('paths cannot contain NUL', 'nul')
  return isAbsolute(requested) ? resolve(requested) : resolve(root, requested)
}

/** How a canonical path is shown back: workspace-relative ('' = root), absolute when outside. */
export function displayPath(root: string, absolutePath: string): string {
  return isInside(root, absolutePath) ? relative(root, absolutePath) : absolutePath
}

export function kindOf(stats: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): FileKind {
  if (stats.isFile()) return 'file'
  if (stats.isDirectory()) return 'directory'
  if (stats.isSymbolicLink()) return 'symlink'
  return 'other'
}

/** The opaque version: changes with identity, size, content time or metadata time. */
export function versionOf(stats: BigIntStats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`
}

// ── Resolution ───────────────────────────────────────────────────────────────────────────

/**
 * The canonical path of an existing entry, checked against the scope. Missing entries are
 * `not-found` — but only after the deepest existing ancestor proved to be inside, so the answer
 * for an outside path never depends on what exists out there.
 */
export async function resolveExisting(scope: Scope, requested: string, own?: OwnStateLook): Promise<string> {
  const canonical = await resolveCanonical(scope, requested)
  const look = own ?? (await OwnStateLook.take())
  const stats = await lstatOrUndefined(canonical)
  if (!stats || (look && (await look.covers(canonical, stats)))) throw notFound(requested)
  if (await pseudoFilesystem(canonical, stats.dev).catch(() => 'unknown')) throw notFound(requested, 'pseudo-filesystem')
  return canonical
}

async function resolveCanonical(scope: Scope, requested: string): Promise<string> {
  const target = lexicalTarget(scope.root, requested)
  assertInside(scope, target, requested)
  let canonical: string
  try {
    canonical = await realpath(target)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ELOOP') throw notFound(requested, 'symlink-loop')
    // A name or path longer than the file system allows names nothing that exists.
    if (code === 'ENAMETOOLONG') throw notFound(requested, 'name-too-long')
    if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EACCES') throw error
    assertInside(scope, await canonicalAncestor(target), requested)
    throw notFound(requested, code === 'EACCES' ? 'permission-denied' : undefined)
  }
  assertInside(scope, canonical, requested)
  return canonical
}

async function canonicalAncestor(target: string): Promise<string> {
  for (let dir = dirname(target); ; dir = dirname(dir)) {
    try {
      return join(await realpath(dir), relative(dir, target))
    } catch {
      if (dir === dirname(dir)) return target
    }
  }
}

function assertInside(scope: Scope, path: string, requested: string): void {
  if (!scope.allowOutside && !isInside(scope.root, path)) {
    throw new TermkeepError('files/outside-workspace', `${requested} is outside the workspace`, { path: requested })
  }
}

// ── Verified open ─────────────────────────────────────────────────────────────────────────

export interface Opened {
  handle: FileHandle
  absolutePath: string
  stats: BigIntStats
}

const MAX_OPEN_ATTEMPTS = 3

/**
 * Opens a confined regular file (`expect: 'file'`) or directory (`'directory'`) for reading.
 * Wrong kinds are `not-regular-file` / `not-directory` with the kind found.
 */
export async function openVerified(scope: Scope, requested: string, expect: 'file' | 'directory', hooks: OpenHooks = {}): Promise<Opened> {
  const own = hooks.own ?? (await OwnStateLook.take())
  for (let attempt = 1; attempt <= MAX_OPEN_ATTEMPTS; attempt++) {
    const absolutePath = await resolveCanonical(scope, requested)
    await hooks.afterResolve?.(absolutePath)
    const checked = await lstatOrUndefined(absolutePath)
    if (!checked || checked.isSymbolicLink()) continue // changed since realpath: resolve again
    const kind = kindOf(checked)
    if (expect === 'file' && kind !== 'file') throw notRegular(requested, kind)
    if (expect === 'directory' && kind !== 'directory') throw notDirectory(requested, kind)
    await hooks.beforeOpen?.(absolutePath)
    const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (expect === 'directory' ? constants.O_DIRECTORY : 0)
    let handle: FileHandle
    try {
      handle = await open(absolutePath, flags)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENOTDIR') continue // swapped: start over
      if (code === 'EACCES') throw notFound(requested, 'permission-denied')
      throw error
    }
    try {
      const stats = await handle.stat({ bigint: true })
      if (stats.dev === checked.dev && stats.ino === checked.ino) {
        const actual = await descriptorPath(handle, absolutePath)
        if (scope.allowOutside || isInside(scope.root, actual)) {
          if (own && (await own.covers(actual || absolutePath, stats))) throw notFound(requested)
          if (await onPseudoFilesystem(handle, absolutePath, stats)) throw notFound(requested, 'pseudo-filesystem')
          await hooks.afterOpen?.(absolutePath)
          return { handle, absolutePath, stats }
        }
      }
    } catch (error) {
      await handle.close()
      throw error
    }
    await handle.close()
  }
  throw notFound(requested, 'changed-while-opening')
}

async function lstatOrUndefined(path: string): Promise<BigIntStats | undefined> {
  try {
    return await lstat(path, { bigint: true })
  } catch (error) {
    // ENOTDIR: a directory on the path became a file since it was resolved — gone as well.
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw error
  }
}

/**
 * Where the descriptor really is. Linux names it in /proc/self/fd; elsewhere the best available
 * is that the canonical path still has no symlink in it ('' when it is gone: inside nothing).
 */
async function descriptorPath(handle: FileHandle, absolutePath: string): Promise<string> {
  try {
    return await readlink(`/proc/self/fd/${handle.fd}`)
  } catch {
    return await realpath(absolutePath).catch(() => '')
  }
}

/** Is the opened object on a pseudo filesystem? Looked at through the descriptor where Linux names
 * it, so the answer is about what was opened; one that cannot be told counts as pseudo. */
async function onPseudoFilesystem(handle: FileHandle, absolutePath: string, stats: BigIntStats): Promise<boolean> {
  const found = await pseudoFilesystem(`/proc/self/fd/${handle.fd}`, stats.dev)
    .catch(() => pseudoFilesystem(absolutePath, stats.dev))
    .catch(() => 'unknown')
  return found !== undefined
}

/** A path for reading the directory behind a verified handle without re-resolving its name. */
export function handlePath(opened: Opened): string {
  return process.platform === 'linux' ? `/proc/self/fd/${opened.handle.fd}` : opened.absolutePath
}

// ── Errors ───────────────────────────────────────────────────────────────────────────────

export function badRequest(message: string, reason: string): TermkeepError {
  return new TermkeepError('files/bad-request', message, { reason })
}

export function notFound(path: string, reason?: string): TermkeepError {
  return new TermkeepError('files/not-found', `${path} does not exist`, reason ? { path, reason } : { path })
}

export function notRegular(path: string, kind: FileKind): TermkeepError {
  return new TermkeepError('files/not-regular-file', `${path} is not a regular file (${kind})`, { path, kind })
}

export function notDirectory(path: string, kind: FileKind): TermkeepError {
  return new TermkeepError('files/not-directory', `${path} is not a directory (${kind})`, { path, kind })
}
