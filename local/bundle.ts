/**
 * A process's entry module (the sidecar's, the keeper's) as one plain-JavaScript module that
 * esbuild builds from it and every source file it imports, packages left to Node. Under tsx every
 * module of the graph, packages included, goes through tsx's loader thread one message at a time:
 * measured on this 2-core machine under load, a sidecar's start took 1.9–2.3 s of its CPU that way
 * and 0.7–0.8 s from the bundle, and the process no longer carries tsx's loader.
 *
 * The code is the same: esbuild compiles each file as tsx does (tsx is esbuild too, with keepNames,
 * which sidecar/workflows/program.ts relies on), and every `import.meta.url` is the source file's
 * own, so the files and workers found next to a module (the keeper's entry, worker threads, shell
 * scripts, package.json) are the same ones. Stack traces name the source files (a source map, and
 * Node's --enable-source-maps). A bundle is kept under node_modules/.cache/termkeep/ (where Node
 * resolves the packages it imports), at the source's own relative path (`sidecar/main-<hash>.mjs`:
 * the command line still names `sidecar/main`, by which the locks recognize their holders), and
 * rebuilt when any input's size or modification time changed.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type BuildInputs, INSTALL_ROOT as ROOT, inputsUnchanged, placeFile, recordInput } from './build-cache.ts'

/** Older bundles (of sources since changed) are removed after this: a process started from one
 * reads its source map only when it prints a stack trace. */
const STALE_MS = 24 * 60 * 60 * 1000
/** What is replaced by the source file's own value. A pattern, not the words: this file is
 * bundled too (into the sidecar), and its own text must come through unchanged. */
const META = /\bimport\.meta\.(url|filename|dirname)\b/g
/** Files besides the graph's sources that change what esbuild makes of them. */
const SETTINGS = ['tsconfig.json', 'package.json']

/** Node options a bundle's process needs. */
export const BUNDLE_NODE_FLAGS: readonly string[] = ['--enable-source-maps']

/** The bundle of `source` (an absolute path of a .ts file in this installation), built first when
 * it is missing or an input changed. Throws when it cannot be built or written. */
export async function bundled(source: string): Promise<string> {
  const path = relative(ROOT, source)
  const cache = join(ROOT, 'node_modules', '.cache', 'termkeep', dirname(path))
  const stem = basename(path).replace(/\.ts$/, '')
  const index = join(cache, `${stem}.json`)
  return fresh(cache, index) ?? (await build(source, cache, index, stem))
}

interface Index {
  /** The bundle's file name, beside its index. */
  file: string
  inputs: BuildInputs
}

/** The current bundle's path, if every input is as it was when it was built. */
function fresh(cache: string, index: string): string | undefined {
  try {
    const { file, inputs } = JSON.parse(readFileSync(index, 'utf8')) as Index
    if (!inputsUnchanged(inputs)) return undefined
    const entry = join(cache, file)
    statSync(entry)
    return entry
  } catch {
    return undefined
  }
}

async function build(source: string, cache: string, index: string, stem: string): Promise<string> {
  const { build } = await import('esbuild')
  // Stats taken before the build: a file edited meanwhile reads as changed at the next start.
  const inputs: BuildInputs = {}
  const stat = (path: string) => recordInput(inputs, path)
  for (const path of SETTINGS) stat(path)
  const built = await build({
    entryPoints: [source],
    absWorkingDir: ROOT,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    keepNames: true,
    sourcemap: 'external',
    outfile: join(cache, `${stem}.mjs`),
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [
      {
        name: 'import-meta-of-the-source',
        setup(on) {
          on.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
            stat(relative(ROOT, args.path))
            const own = { url: pathToFileURL(args.path).href, filename: args.path, dirname: dirname(args.path) }
            const text = readFileSync(args.path, 'utf8').replace(META, (_, name: keyof typeof own) => JSON.stringify(own[name]))
            return { contents: text, loader: 'ts' }
          })
        },
      },
    ],
  })
  for (const path of Object.keys(built.metafile.inputs)) stat(path)
  const code = built.outputFiles.find((file) => file.path.endsWith('.mjs'))!
  const map = built.outputFiles.find((file) => file.path.endsWith('.map'))!
  const hash = createHash('sha256').update(code.contents).digest('hex').slice(0, 16)
  const file = `${stem}-${hash}.mjs`
  mkdirSync(cache, { recursive: true })
  const place = (name: string, contents: string | Uint8Array) => placeFile(join(cache, name), contents)
  place(`${file}.map`, map.contents)
  place(file, code.text.replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${file}.map\n`))
  place(basename(index), JSON.stringify({ file, inputs } satisfies Index))
  prune(cache, stem, file)
  return join(cache, file)
}

function prune(cache: string, stem: string, current: string): void {
  for (const name of readdirSync(cache)) {
    if (!name.startsWith(`${stem}-`) || name.startsWith(current)) continue
    const path = join(cache, name)
    try {
      if (Date.now() - statSync(path).mtimeMs > STALE_MS) rmSync(path, { force: true })
    } catch {
      // removed by another launcher
    }
  }
}
