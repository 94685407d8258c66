/**
 * The seed's file resolvers and facts. Each resolves beneath a root (roots.ts), canonicalizes,
 * checks the constraint (`beneath` / `beneathRelative` / `extension`), opens what it found
 * confined to its root and mints a handle from the opened descriptor's identity. Anything unsafe
 * or missing is `null`; only a bad handle (404) or an undeclared variable (403) is an error. A
 * directory that is the environment's home or holds it is `null` too (roots.ts).
 */
import { realpath } from 'node:fs/promises'
import { basename, join } from 'node:path'
import type * as v from 'valibot'
import type {
  CanonicalFile,
  EnvironmentRelativePath,
  FileStat,
  Handle,
  HandleOnly,
  HomeRelativePath,
  MaybeHandle,
  MaybePath,
  MaybeStat,
  ResolveDirectoryRelativeToEnvironment,
  ResolveHomeDirectory,
  ResolveHomeRelative,
  ResolvePathUnderEnvironment,
  ResolvePathUnderHome,
  ResolveRelativeToEnvironment,
} from '../../schema/wire/observation.ts'
import { isInside } from '../files/confine.ts'
import type { ObservedTerminal } from './observed.ts'
import {
  canonicalWithin,
  homeRoot,
  identityOf,
  mintPath,
  openConfined,
  relativeBeneath,
  variableRoot,
  withHandle,
  type Root,
} from './roots.ts'

type In<S extends v.GenericSchema> = v.InferOutput<S>

/**
 * The handle for what `target` names, if it canonicalizes into `within` (a directory may be
 * `within` itself, a file must be beneath it), has `extension`, and opens as `expect` inside root.
 */
async function resolveBeneath(
  view: ObservedTerminal,
  root: Root | undefined,
  within: string | undefined,
  target: (root: Root) => string,
  expect: 'file' | 'directory',
  extension?: string,
): Promise<Handle | null> {
  if (!root || within === undefined) return null
  const canonical = await realpath(target(root)).catch(() => undefined)
  // A directory root holding the home (the home itself, or a variable naming it or above) is not one.
  const home = expect === 'directory' ? (root.base === 'home' ? root : await homeRoot(view))?.path : undefined
  const kindFits = (path: string) => (expect === 'directory' ? home === undefined || !isInside(path, home) : path !== within)
  const fits = (path: string) => isInside(within, path) && kindFits(path) && (!extension || basename(path).endsWith(extension))
  if (canonical === undefined || !fits(canonical)) return null
  const opened = await openConfined(root.path, canonical, expect)
  if (!opened) return null
  try {
    // Re-checked on what was opened: the path may have changed between the two looks.
    return fits(opened.absolutePath) ? mintPath(view, expect === 'file' ? 'f' : 'd', identityOf(opened, root)) : null
  } finally {
    await opened.handle.close()
  }
}

const below = (relativePath: string) => (root: Root) => join(root.path, relativePath)
const at = (path: string) => () => path

export async function resolveHomeDirectory(view: ObservedTerminal, r: In<typeof ResolveHomeDirectory>): Promise<MaybeHandle> {
  const root = await homeRoot(view)
  const within = root && (await canonicalWithin(root, r.beneath?.homeRelative))
  return { handle: await resolveBeneath(view, root, within, below(r.relativePath), 'directory') }
}

export async function resolveDirectoryRelativeToEnvironment(
  view: ObservedTerminal,
  r: In<typeof ResolveDirectoryRelativeToEnvironment>,
): Promise<MaybeHandle> {
  const root = await variableRoot(view, r.environmentVariable)
  const within = root && (await canonicalWithin(root, r.beneathRelative))
  return { handle: await resolveBeneath(view, root, within, below(r.relativePath), 'directory') }
}

export async function resolveRelativeToEnvironment(
  view: ObservedTerminal,
  r: In<typeof ResolveRelativeToEnvironment>,
): Promise<MaybeHandle> {
  const root = await variableRoot(view, r.environmentVariable)
  return { handle: await resolveBeneath(view, root, root?.path, below(r.relativePath), 'file', r.extension) }
}

export async function resolvePathUnderEnvironment(view: ObservedTerminal, r: In<typeof ResolvePathUnderEnvironment>): Promise<MaybeHandle> {
  const root = await variableRoot(view, r.environmentVariable)
  const within = root && (await canonicalWithin(root, r.beneathRelative))
  return { handle: await resolveBeneath(view, root, within, at(r.providerPath), 'file', r.extension) }
}

export async function resolveHomeRelative(view: ObservedTerminal, r: In<typeof ResolveHomeRelative>): Promise<MaybeHandle> {
  const root = await homeRoot(view)
  const within = root && (await canonicalWithin(root, r.beneath?.homeRelative))
  return { handle: await resolveBeneath(view, root, within, below(r.relativePath), 'file', r.extension) }
}

export async function resolvePathUnderHome(view: ObservedTerminal, r: In<typeof ResolvePathUnderHome>): Promise<MaybeHandle> {
  const root = await homeRoot(view)
  const within = root && (await canonicalWithin(root, r.beneath.homeRelative))
  return { handle: await resolveBeneath(view, root, within, at(r.providerPath), 'file', r.extension) }
}

export async function environmentRelativePath(view: ObservedTerminal, r: In<typeof EnvironmentRelativePath>): Promise<MaybePath> {
  return withHandle(view, r.handle, 'f', async (opened) => {
    const root = await variableRoot(view, r.environmentVariable)
    const within = root && (await canonicalWithin(root, r.beneathRelative))
    return { path: (within && relativeBeneath(within, opened.absolutePath)) ?? null }
  })
}

export async function homeRelativePath(view: ObservedTerminal, r: In<typeof HomeRelativePath>): Promise<MaybePath> {
  return withHandle(view, r.handle, 'f', async (opened) => {
    const root = await homeRoot(view)
    const within = root && (await canonicalWithin(root, r.beneath.homeRelative))
    return { path: (within && relativeBeneath(within, opened.absolutePath)) ?? null }
  })
}

export async function canonicalFile(view: ObservedTerminal, r: In<typeof CanonicalFile>): Promise<MaybeHandle> {
  return withHandle(view, r.handle, 'f', async (opened, identity) => {
    if (r.extension && !basename(opened.absolutePath).endsWith(r.extension)) return { handle: null }
    if (r.beneath) {
      const root = await homeRoot(view)
      const within = root && (await canonicalWithin(root, r.beneath.homeRelative))
      if (!within || relativeBeneath(within, opened.absolutePath) === undefined) return { handle: null }
    }
    return { handle: mintPath(view, 'f', identity) }
  })
}

export async function realpathOf(view: ObservedTerminal, r: In<typeof HandleOnly>): Promise<MaybeHandle> {
  return withHandle(view, r.handle, 'f', async (_opened, identity) => ({ handle: mintPath(view, 'f', identity) }))
}

export async function statOf(view: ObservedTerminal, r: In<typeof HandleOnly>): Promise<MaybeStat> {
  return withHandle(view, r.handle, 'f', async (opened, identity) => {
    const stats = await opened.handle.stat({ bigint: true })
    const stat: v.InferOutput<typeof FileStat> = {
      handle: mintPath(view, 'f', identity),
      kind: 'file',
      size: Number(stats.size),
      modifiedAt: new Date(Number(stats.mtimeMs)).toISOString(),
    }
    return { stat }
  })
}
