/**
 * Where observation may look: beneath the observed environment's HOME, or beneath the value of a
 * variable the caller's token declared — both taken from the terminal's processes, canonical
 * (realpath) and a directory; the filesystem root itself is never a root. Every file or directory
 * is opened through files/confine.ts's `openVerified` with its root as the scope, so a symlink
 * that leads out, or a component swapped for one mid-open, is caught after resolution and on the
 * opened descriptor; special files (FIFOs, devices) are refused before they are opened. termkeep's
 * own state (files/own-state.ts) and anything on a pseudo filesystem (files/pseudo-fs.ts: procfs,
 * sysfs, …) are refused there too, so they resolve, list, read and follow as if absent; nor is a
 * directory on one ever a root. A directory root is never the home itself nor anything holding it: a grant
 * to watch one agent's journals is not a walk over the user's whole home.
 */
import { realpath, stat } from 'node:fs/promises'
import { isAbsolute, relative } from 'node:path'
import { TermkeepError } from '../../schema/errors.ts'
import type { Handle } from '../../schema/wire/observation.ts'
import { isInside, openVerified, type Opened, type Scope } from '../files/confine.ts'
import type { OwnStateLook } from '../files/own-state.ts'
import { pseudoFilesystem } from '../files/pseudo-fs.ts'
import { objectOf, sameObject, type PathIdentity } from './handles.ts'
import { handleInvalid, type ObservedTerminal } from './observed.ts'

export interface Root {
  /** Canonical directory. */
  path: string
  base: PathIdentity['base']
}

/** The environment's home: HOME of the terminal's processes (foreground first). */
export async function homeRoot(view: ObservedTerminal): Promise<Root | undefined> {
  return rootAt(await view.variable('HOME'), 'home')
}

/** The value of a declared variable as a root; 403 `observe/undeclared` for any other name. */
export async function variableRoot(view: ObservedTerminal, name: string): Promise<Root | undefined> {
  view.requireDeclared([name])
  return rootAt(await view.variable(name), `env:${name}`)
}

async function rootAt(value: string | undefined, base: Root['base']): Promise<Root | undefined> {
  if (value === undefined || !isAbsolute(value) || value.includes('\0')) return undefined
  const path = await realpath(value).catch(() => undefined)
  if (path === undefined || path === '/') return undefined
  const stats = await stat(path, { bigint: true }).catch(() => undefined)
  if (!stats?.isDirectory()) return undefined
  // A HOME of /proc/self would be the sidecar's own /proc entry once resolved here.
  if ((await pseudoFilesystem(path, stats.dev).catch(() => 'unknown')) !== undefined) return undefined
  return { path, base }
}

/** The canonical directory `relativePath` names beneath `root`, if it exists inside it. */
export async function canonicalWithin(root: Root, relativePath: string | undefined): Promise<string | undefined> {
  if (relativePath === undefined) return root.path
  const path = await realpath(`${root.path}/${relativePath}`).catch(() => undefined)
  return path !== undefined && isInside(root.path, path) ? path : undefined
}

/** Pure: `path` relative to `within` when strictly beneath it (a fact, never authority). */
export function relativeBeneath(within: string, path: string): string | undefined {
  return path !== within && isInside(within, path) ? relative(within, path) : undefined
}

/** Pure: how a path is shown: `~/…` beneath the home, `$NAME/…` beneath a declared variable's
 * value (the first root that holds it), else nothing (raw absolute paths are never shown). */
export function shownPath(roots: readonly Root[], path: string): string | undefined {
  for (const root of roots) {
    if (!isInside(root.path, path)) continue
    const prefix = root.base === 'home' ? '~' : `$${root.base.slice(4)}`
    return path === root.path ? prefix : `${prefix}/${relative(root.path, path)}`
  }
  return undefined
}

/** The home and every declared variable's root, for display paths and open files. */
export async function knownRoots(view: ObservedTerminal): Promise<Root[]> {
  const roots = [await homeRoot(view)]
  for (const name of [...view.declared].sort()) roots.push(await rootAt(await view.variable(name), `env:${name}`))
  return roots.filter((root): root is Root => root !== undefined)
}

export function scopeOf(root: string): Scope {
  return { root, allowOutside: false }
}

/** Opens `path` (a file or directory) confined to `root`; undefined for anything not there, of
 * the wrong kind, special, outside, or termkeep's own (never an error: resolvers answer null). */
export async function openConfined(
  root: string,
  path: string,
  expect: 'file' | 'directory',
  own?: OwnStateLook,
): Promise<Opened | undefined> {
  try {
    return await openVerified(scopeOf(root), path, expect, own && { own })
  } catch (error) {
    if (error instanceof TermkeepError) return undefined
    throw error
  }
}

export function identityOf(opened: Opened, root: Root): PathIdentity {
  return { path: opened.absolutePath, ...objectOf(opened.stats), root: root.path, base: root.base }
}

export function mintPath(view: ObservedTerminal, kind: 'f' | 'd', identity: PathIdentity): Handle {
  return view.codec.mint(view.binding, { kind, ...identity })
}

/**
 * Runs `use` on the file or directory a handle names, opened and verified: the handle is this
 * terminal's, of the right kind, and its path still names the same object (device, inode, birth)
 * inside its root. Anything else is 404 `observe/handle-invalid`.
 */
export async function withHandle<T>(
  view: ObservedTerminal,
  handle: Handle,
  kind: 'f' | 'd',
  use: (opened: Opened, identity: PathIdentity) => Promise<T>,
): Promise<T> {
  const identity = view.codec.open(handle.id, view.binding, [kind])
  if (!identity) throw handleInvalid(kind === 'f' ? 'file handle' : 'directory handle')
  const opened = await openConfined(identity.root, identity.path, kind === 'f' ? 'file' : 'directory')
  if (!opened) throw handleInvalid(kind === 'f' ? 'file handle' : 'directory handle')
  try {
    if (opened.absolutePath !== identity.path || !sameObject(opened.stats, identity)) {
      throw handleInvalid(kind === 'f' ? 'file handle' : 'directory handle')
    }
    return await use(opened, identity)
  } finally {
    await opened.handle.close()
  }
}
