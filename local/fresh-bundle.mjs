/**
 * Whether a cached esbuild bundle (bundle.ts) is still that of its sources, in plain JavaScript:
 * cli/bin.js asks before anything else loads, since registering tsx alone costs a command about
 * 0.3 s of CPU here. bundle.ts and worker-bundle.ts use the same check (through build-cache.ts).
 *
 * Fresh means every input the build read has the size and modification time it had then (no
 * content hash: a start must not read the whole graph).
 */
import { readFileSync, statSync } from 'node:fs'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The installation: the directory holding package.json and node_modules (esbuild's working
 * directory, to which its metafile's input paths are relative). */
export const INSTALL_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Whether every input is as recorded (a missing one is a change). */
export function inputsUnchanged(inputs) {
  try {
    return Object.entries(inputs).every(([path, [size, mtimeMs]]) => {
      const s = statSync(join(INSTALL_ROOT, path))
      return s.size === size && s.mtimeMs === mtimeMs
    })
  } catch {
    return false
  }
}

/** Where the bundle of `source` (an absolute path of a .ts file in this installation) is kept:
 * under node_modules/.cache/termkeep/ (where Node resolves the packages it imports), at the
 * source's own relative path, with an index file naming the current build and its inputs. */
export function bundleCache(source) {
  const path = relative(INSTALL_ROOT, source)
  const cache = join(INSTALL_ROOT, 'node_modules', '.cache', 'termkeep', dirname(path))
  const stem = basename(path).replace(/\.ts$/, '')
  return { cache, stem, index: join(cache, `${stem}.json`) }
}

/** The current bundle of `source`, if it was built and every input is as it was then. */
export function freshBundle(source) {
  const { cache, index } = bundleCache(source)
  try {
    const { file, inputs } = JSON.parse(readFileSync(index, 'utf8'))
    if (!inputsUnchanged(inputs)) return undefined
    const entry = join(cache, file)
    statSync(entry)
    return entry
  } catch {
    return undefined
  }
}
