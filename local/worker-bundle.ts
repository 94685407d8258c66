/**
 * A worker thread's code as one plain-JavaScript module (esbuild, from its entry and everything it
 * imports, packages included), started from a `data:` URL. A worker started through tsx
 * (worker-thread.ts) registers tsx's loader in its own isolate: measured here +25 to +40 MiB RSS
 * per worker (the sidecar's emulator workers, the keeper's PTY thread); from a bundle a worker
 * costs ~6 MiB. Built once per process (~0.2–0.4 s of CPU), and cached in a private directory under
 * the system's temporary one, keyed by every input's size and modification time, so the many
 * processes a test run starts build it once.
 *
 * `natives`: packages that load a native addon at run time (node-pty), which a bundle cannot
 * hold: they stay imports, of their absolute file URL (a `data:` module resolves no bare name).
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { buildSync } from 'esbuild'
import { type BuildInputs, INSTALL_ROOT as ROOT, inputsUnchanged, placeFile, recordInput } from './build-cache.ts'

const built = new Map<string, URL>()

/** The module of `entry` (a .ts file's URL) as a `data:` URL, built or read from the cache once. */
export function workerBundleSource(entry: URL, natives: readonly string[] = []): URL {
  let source = built.get(entry.href)
  if (!source) {
    source = new URL(`data:text/javascript;base64,${Buffer.from(cachedBuild(fileURLToPath(entry), natives)).toString('base64')}`)
    built.set(entry.href, source)
  }
  return source
}

interface CacheEntry {
  inputs: BuildInputs
  sha256: string
}

/** Each of `natives` (left external by esbuild) imported from its resolved file URL instead. */
function resolveNatives(text: string, natives: readonly string[]): string {
  const require = createRequire(import.meta.url)
  let out = text
  for (const name of natives) {
    const url = JSON.stringify(pathToFileURL(require.resolve(name)).href)
    out = out.replaceAll(`from ${JSON.stringify(name)}`, `from ${url}`)
  }
  return out
}

function cachedBuild(entry: string, natives: readonly string[]): string {
  const dir = cacheDir()
  const key = createHash('sha256')
    .update(`${entry}\0${natives.join(',')}`)
    .digest('hex')
    .slice(0, 16)
  const meta = dir && join(dir, `${key}.json`)
  const code = dir && join(dir, `${key}.mjs`)
  if (meta && code) {
    try {
      const cached = JSON.parse(readFileSync(meta, 'utf8')) as CacheEntry
      const text = inputsUnchanged(cached.inputs) ? readFileSync(code, 'utf8') : undefined
      if (text !== undefined && createHash('sha256').update(text).digest('hex') === cached.sha256) return text
    } catch {
      // no cache yet, or an input moved: build
    }
  }
  const result = buildSync({
    entryPoints: [entry],
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    metafile: true,
    logLevel: 'error',
    external: [...natives],
  })
  const text = resolveNatives(result.outputFiles[0].text, natives)
  if (meta && code) {
    try {
      const inputs: BuildInputs = {}
      for (const path of Object.keys(result.metafile.inputs)) recordInput(inputs, path)
      const cached: CacheEntry = { inputs, sha256: createHash('sha256').update(text).digest('hex') }
      placeFile(code, text)
      placeFile(meta, JSON.stringify(cached))
    } catch {
      // a cache that cannot be written only costs the next start a build
    }
  }
  return text
}

/** A directory only this user can write, or undefined (no cache). */
function cacheDir(): string | undefined {
  try {
    const dir = join(tmpdir(), `termkeep-workers-${userInfo().uid}`)
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const s = statSync(dir)
    if (s.uid !== userInfo().uid || (s.mode & 0o077) !== 0) return undefined
    return dir
  } catch {
    return undefined
  }
}
