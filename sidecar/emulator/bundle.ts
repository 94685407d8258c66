/**
 * The emulator worker's code as one plain-JavaScript module (esbuild, from worker.ts and
 * everything it imports, packages included), started from a `data:` URL. A worker started
 * through tsx (sidecar/worker-thread.ts) registers tsx's loader in its own isolate: measured here
 * +25 to +40 MiB RSS per emulator worker, more than ten quiet terminals' screens; from the bundle a
 * worker costs ~6 MiB. Built once per process (~0.2–0.4 s of CPU), and cached in a private
 * directory under the system's temporary one, keyed by every input's size and modification time,
 * so the many sidecars a test run starts build it once.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildSync } from 'esbuild'

const ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url))
/** Inputs in the metafile are relative to the working directory esbuild ran in. */
const ROOT = resolve(dirname(ENTRY), '../..')

let source: URL | undefined

/** The worker's module as a `data:` URL (built or read from the cache on first use). */
export function emulatorWorkerSource(): URL {
  source ??= new URL(`data:text/javascript;base64,${Buffer.from(cachedBuild()).toString('base64')}`)
  return source
}

interface CacheEntry {
  inputs: Record<string, [size: number, mtimeMs: number]>
  sha256: string
}

function cachedBuild(): string {
  const dir = cacheDir()
  const key = createHash('sha256').update(ENTRY).digest('hex').slice(0, 16)
  const meta = dir && join(dir, `${key}.json`)
  const code = dir && join(dir, `${key}.mjs`)
  if (meta && code) {
    try {
      const entry = JSON.parse(readFileSync(meta, 'utf8')) as CacheEntry
      const fresh = Object.entries(entry.inputs).every(([path, [size, mtime]]) => {
        const s = statSync(join(ROOT, path))
        return s.size === size && s.mtimeMs === mtime
      })
      const text = fresh ? readFileSync(code, 'utf8') : undefined
      if (text !== undefined && createHash('sha256').update(text).digest('hex') === entry.sha256) return text
    } catch {
      // no cache yet, or an input moved: build
    }
  }
  const built = buildSync({
    entryPoints: [ENTRY],
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    metafile: true,
    logLevel: 'error',
  })
  const text = built.outputFiles[0].text
  if (meta && code) {
    try {
      const inputs: CacheEntry['inputs'] = {}
      for (const path of Object.keys(built.metafile.inputs)) {
        const s = statSync(join(ROOT, path))
        inputs[path] = [s.size, s.mtimeMs]
      }
      const entry: CacheEntry = { inputs, sha256: createHash('sha256').update(text).digest('hex') }
      const suffix = `.${process.pid}.tmp`
      writeFileSync(code + suffix, text)
      renameSync(code + suffix, code)
      writeFileSync(meta + suffix, JSON.stringify(entry))
      renameSync(meta + suffix, meta)
    } catch {
      // a cache that cannot be written only costs the next start a build
    }
  }
  return text
}

/** A directory only this user can write, or undefined (no cache). */
function cacheDir(): string | undefined {
  try {
    const dir = join(tmpdir(), `termkeep-emulator-${userInfo().uid}`)
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const s = statSync(dir)
    if (s.uid !== userInfo().uid || (s.mode & 0o077) !== 0) return undefined
    return dir
  } catch {
    return undefined
  }
}
