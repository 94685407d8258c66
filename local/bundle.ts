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
 *
 * `split`: the bundle is a directory of modules, split at each dynamic `import()` as the sources
 * are, so a program that loads its parts lazily (the CLI: one module per command) still does.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { BuildOptions, OutputFile } from 'esbuild'
import { type BuildInputs, INSTALL_ROOT as ROOT, placeFile, recordInput } from './build-cache.ts'
import { bundleCache, freshBundle } from './fresh-bundle.mjs'

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
 * it is missing or an input changed; its entry module's path. Throws when it cannot be built or
 * written. */
export async function bundled(source: string, { split = false } = {}): Promise<string> {
  return freshBundle(source) ?? (await build(source, split))
}

interface Index {
  /** The bundle's entry, relative to its index's directory. */
  file: string
  inputs: BuildInputs
}

async function build(source: string, split: boolean): Promise<string> {
  const { build } = await import('esbuild')
  const { cache, stem, index } = bundleCache(source)
  // Stats taken before the build: a file edited meanwhile reads as changed at the next start.
  const inputs: BuildInputs = {}
  const stat = (path: string) => recordInput(inputs, path)
  for (const path of SETTINGS) stat(path)
  const layout: BuildOptions = split
    ? { splitting: true, outdir: join(cache, stem), entryNames: '[name]', chunkNames: 'chunk-[hash]', outExtension: { '.js': '.mjs' } }
    : { outfile: join(cache, `${stem}.mjs`) }
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
    ...layout,
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [
      {
        name: 'import-meta-of-the-source',
        setup(on) {
          // .mjs too: local/fresh-bundle.mjs finds the installation from its own URL.
          on.onLoad({ filter: /\.(?:[cm]?ts|mjs)$/ }, (args) => {
            stat(relative(ROOT, args.path))
            const own = { url: pathToFileURL(args.path).href, filename: args.path, dirname: dirname(args.path) }
            const text = readFileSync(args.path, 'utf8').replace(META, (_, name: keyof typeof own) => JSON.stringify(own[name]))
            return { contents: text, loader: args.path.endsWith('.mjs') ? 'js' : 'ts' }
          })
        },
      },
    ],
  })
  for (const path of Object.keys(built.metafile.inputs)) stat(path)
  mkdirSync(cache, { recursive: true })
  const file = split ? placeDirectory(cache, stem, built.outputFiles) : placeModule(cache, stem, built.outputFiles)
  placeFile(index, JSON.stringify({ file, inputs } satisfies Index))
  prune(cache, stem, file.split('/')[0])
  return join(cache, file)
}

/** One module and its map, as `<stem>-<hash>.mjs`. */
function placeModule(cache: string, stem: string, outputs: OutputFile[]): string {
  const code = outputs.find((file) => file.path.endsWith('.mjs'))!
  const map = outputs.find((file) => file.path.endsWith('.map'))!
  const file = `${stem}-${digest([code])}.mjs`
  placeFile(join(cache, `${file}.map`), map.contents)
  placeFile(join(cache, file), code.text.replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${file}.map\n`))
  return file
}

/** A split build as the directory `<stem>-<hash>/`, written beside it and renamed into place
 * whole (modules import each other by relative name, so the directory's own name is free). */
function placeDirectory(cache: string, stem: string, outputs: OutputFile[]): string {
  const dir = `${stem}-${digest(outputs)}`
  const target = join(cache, dir)
  const temporary = `${target}.${process.pid}.tmp`
  for (const output of outputs) {
    const path = join(temporary, relative(join(cache, stem), output.path))
    mkdirSync(dirname(path), { recursive: true })
    placeFile(path, output.contents)
  }
  try {
    renameSync(temporary, target)
  } catch (error) {
    // Another process placed the same build first.
    rmSync(temporary, { recursive: true, force: true })
    if (!statSync(target).isDirectory()) throw error
  }
  return `${dir}/${stem}.mjs`
}

function digest(outputs: OutputFile[]): string {
  const hash = createHash('sha256')
  for (const output of [...outputs].sort((a, b) => a.path.localeCompare(b.path))) hash.update(output.path).update(output.contents)
  return hash.digest('hex').slice(0, 16)
}

function prune(cache: string, stem: string, current: string): void {
  for (const name of readdirSync(cache)) {
    if (!name.startsWith(`${stem}-`) || name.startsWith(current)) continue
    const path = join(cache, name)
    try {
      if (Date.now() - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true })
    } catch {
      // removed by another launcher
    }
  }
}
