/**
 * How a launcher starts the sidecar process (cli/serve.ts, and the tests' and benchmarks'
 * test/support/sidecar.ts: what is tested and measured is what runs): from one plain-JavaScript
 * module that esbuild builds from sidecar/main.ts and every source file it imports, packages left
 * to Node. Under tsx every module of the graph, packages included, goes through tsx's loader
 * thread one message at a time: measured on this 2-core machine under load, a start took 1.9–2.3 s
 * of the sidecar's CPU that way and 0.7–0.8 s from the bundle, and the sidecar no longer carries
 * tsx's loader (the emulator worker is bundled for the same reason: emulator/bundle.ts).
 *
 * The code is the same: esbuild compiles each file as tsx does (tsx is esbuild too, with keepNames,
 * which workflows/program.ts relies on), and every `import.meta.url` is the source file's own, so
 * the files and workers found next to a module (the keeper's entry, worker threads, shell scripts,
 * package.json) are the same ones. Stack traces name the source files (a source map, and Node's
 * --enable-source-maps). The bundle is kept under node_modules/.cache/termkeep/sidecar/ (where
 * Node resolves the packages it imports) and rebuilt when any input's size or modification time
 * changed; a checkout where it cannot be written starts the sidecar under tsx, as before.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const SOURCE = fileURLToPath(new URL('./main.ts', import.meta.url))
const ROOT = resolve(dirname(SOURCE), '..')
/** Its path names `sidecar/main` as the source's does: the data directory's lock recognizes its
 * holder by that (data-dir-lock.ts), and `termkeep stop` finds it so. */
const CACHE = join(ROOT, 'node_modules', '.cache', 'termkeep', 'sidecar')
const INDEX = join(CACHE, 'main.json')
/** Older bundles (of sources since changed) are removed after this: a sidecar started from one
 * reads its source map only when it prints a stack trace. */
const STALE_MS = 24 * 60 * 60 * 1000
/** Files besides the graph's sources that change what esbuild makes of them. */
const SETTINGS = ['tsconfig.json', 'package.json']

export interface SidecarLaunch {
  /** The module to start. */
  entry: string
  /** Node options it needs before the sidecar's own (SIDECAR_NODE_FLAGS). */
  execArgv: string[]
}

interface Index {
  /** The bundle's file name in CACHE. */
  file: string
  inputs: Record<string, [size: number, mtimeMs: number]>
}

/** The bundle, built first when a source changed; tsx and the source when it cannot be. */
export async function sidecarLaunch(): Promise<SidecarLaunch> {
  try {
    return { entry: fresh() ?? (await build()), execArgv: ['--enable-source-maps'] }
  } catch (error) {
    console.warn(`termkeep: starting the sidecar under tsx (its bundle could not be built: ${(error as Error).message})`)
    return { entry: SOURCE, execArgv: ['--import', import.meta.resolve('tsx')] }
  }
}

/** The current bundle's path, if every input is as it was when it was built. */
function fresh(): string | undefined {
  try {
    const index = JSON.parse(readFileSync(INDEX, 'utf8')) as Index
    for (const [path, [size, mtimeMs]] of Object.entries(index.inputs)) {
      const s = statSync(join(ROOT, path))
      if (s.size !== size || s.mtimeMs !== mtimeMs) return undefined
    }
    const entry = join(CACHE, index.file)
    statSync(entry)
    return entry
  } catch {
    return undefined
  }
}

async function build(): Promise<string> {
  const { build } = await import('esbuild')
  // Stats taken before the build: a file edited meanwhile reads as changed at the next start.
  const inputs: Index['inputs'] = {}
  const stat = (path: string) => {
    const s = statSync(join(ROOT, path))
    inputs[path] ??= [s.size, s.mtimeMs]
  }
  for (const path of SETTINGS) stat(path)
  const built = await build({
    entryPoints: [SOURCE],
    absWorkingDir: ROOT,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    keepNames: true,
    sourcemap: 'external',
    outfile: join(CACHE, 'main.mjs'),
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [
      {
        name: 'import-meta-of-the-source',
        setup(on) {
          on.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
            stat(args.path.slice(ROOT.length + 1))
            const url = pathToFileURL(args.path).href
            const text = readFileSync(args.path, 'utf8')
              .replaceAll('import.meta.url', JSON.stringify(url))
              .replaceAll('import.meta.filename', JSON.stringify(args.path))
              .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
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
  const file = `main-${hash}.mjs`
  mkdirSync(CACHE, { recursive: true })
  const suffix = `.${process.pid}.tmp`
  const place = (name: string, contents: string | Uint8Array) => {
    writeFileSync(join(CACHE, name) + suffix, contents)
    renameSync(join(CACHE, name) + suffix, join(CACHE, name))
  }
  place(`${file}.map`, map.contents)
  place(file, code.text.replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${file}.map\n`))
  place('main.json', JSON.stringify({ file, inputs } satisfies Index))
  prune(file)
  return join(CACHE, file)
}

function prune(current: string): void {
  for (const name of readdirSync(CACHE)) {
    if (name === 'main.json' || name.startsWith(current)) continue
    const path = join(CACHE, name)
    try {
      if (Date.now() - statSync(path).mtimeMs > STALE_MS) rmSync(path, { force: true })
    } catch {
      // removed by another launcher
    }
  }
}
