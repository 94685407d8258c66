/**
 * The install step for node-pty's native build (`postinstall`, after patch-package): make sure
 * node-pty's `build/` is a build of the patched sources that loads and spawns a terminal, and
 * never make it worse.
 *
 *   node --import tsx scripts/native-build.ts [node-pty directory]
 *
 * - A good build is kept: when `build/` carries the stamp of the current sources (written by this
 *   script after it built them) and a terminal spawns from it, nothing is rebuilt. So running the
 *   step again (`npm ci` twice, `npm link`, an `npx` that installs the project) costs a check, not
 *   a compile, and needs neither node-gyp's header cache nor the network.
 * - A rebuild happens in a copy beside the package and is swapped in only once the copy spawns a
 *   terminal; a rebuild that fails (no headers, no compiler, offline) removes nothing. `npm rebuild
 *   node-pty` instead deletes `build/` first and leaves no build at all when the compile fails.
 * - node-gyp finds Node's headers in node's own installation prefix when nothing else names them
 *   (`npm_config_nodedir`), so a fresh HOME without node-gyp's download cache builds offline.
 *
 * Exit code 0 when a good build is in place, 1 when it could not be made (the previous build, if
 * any, is still there and the message says whether it works).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const DEFAULT_PACKAGE = fileURLToPath(new URL('../node_modules/node-pty', import.meta.url))
const STAMP = 'termkeep-build.json'
/** A compile takes ~5 s here; a machine under load may take far longer, a hung one never ends. */
const BUILD_TIMEOUT_MS = 10 * 60_000
/** Loading the addon and running one `exit 7` in a terminal takes well under a second. */
const CHECK_TIMEOUT_MS = 30_000

/** What a build is of: the sources (patched or not) and the platform it was compiled for. */
export function sourceStamp(pkg: string): string {
  const hash = createHash('sha256')
  const files = [join(pkg, 'binding.gyp'), ...listFiles(join(pkg, 'src'))]
  for (const file of files.sort()) {
    hash.update(`${relative(pkg, file)}\0`)
    hash.update(readFileSync(file))
  }
  return JSON.stringify({ sources: hash.digest('hex'), platform: process.platform, arch: process.arch, napi: process.versions.napi })
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? listFiles(path) : [path]
  })
}

function stampOf(pkg: string): string | undefined {
  try {
    return readFileSync(join(pkg, 'build', STAMP), 'utf8')
  } catch {
    return undefined
  }
}

/** Whether node-pty at `pkg` loads in a fresh process and runs a program in a terminal. */
export function spawnsTerminal(pkg: string): boolean {
  const probe = `const pty = require(${JSON.stringify(pkg)});
const p = pty.spawn('/bin/sh', ['-c', 'exit 7'], { cols: 20, rows: 5 });
p.onExit(({ exitCode }) => process.exit(exitCode === 7 ? 0 : 1));`
  return spawnSync(process.execPath, ['-e', probe], { stdio: 'ignore', timeout: CHECK_TIMEOUT_MS }).status === 0
}

/** node-gyp: the one npm runs scripts with, else the one bundled with this node's npm, else PATH's. */
function nodeGyp(): string[] {
  const named = process.env.npm_config_node_gyp
  if (named) return named.endsWith('.js') ? [process.execPath, named] : [named]
  const npmRoots = [
    process.env.npm_execpath && dirname(dirname(process.env.npm_execpath)),
    join(dirname(dirname(realpathSync(process.execPath))), 'lib', 'node_modules', 'npm'),
  ]
  for (const root of npmRoots) {
    const bundled = root && join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js')
    if (bundled && existsSync(bundled)) return [process.execPath, bundled]
  }
  return ['node-gyp']
}

/**
 * `--nodedir` for node-gyp when nothing names one: the prefix this node was installed into, when
 * it ships the headers of exactly this version (distribution packages and official tarballs do).
 */
export function headersDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.npm_config_nodedir) return undefined
  const prefix = dirname(dirname(realpathSync(process.execPath)))
  try {
    const header = readFileSync(join(prefix, 'include', 'node', 'node_version.h'), 'utf8')
    const part = (name: string) => header.match(new RegExp(`#define NODE_${name}_VERSION (\\d+)`))?.[1]
    const version = `v${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}`
    return version === process.version ? prefix : undefined
  } catch {
    return undefined
  }
}

/** Compiles a copy of `pkg` beside it; the copy's directory, or the reason it failed. */
function buildCopy(pkg: string): { dir: string } | { error: string } {
  const dir = join(dirname(pkg), `.${basename(pkg)}-build-${process.pid}`)
  rmSync(dir, { recursive: true, force: true })
  cpSync(pkg, dir, { recursive: true, filter: (source) => relative(pkg, source) !== 'build' })
  const [command, ...args] = nodeGyp()
  const nodedir = headersDir()
  try {
    execFileSync(command, [...args, 'rebuild', ...(nodedir ? [`--nodedir=${nodedir}`] : [])], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: BUILD_TIMEOUT_MS,
    })
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '')
    const reason = stderr.split('\n').find((line) => /gyp ERR! (stack )?Error|error:/i.test(line)) ?? (error as Error).message
    return { error: reason.trim() }
  }
  if (!spawnsTerminal(dir)) {
    rmSync(dir, { recursive: true, force: true })
    return { error: 'the new build does not spawn a terminal' }
  }
  return { dir }
}

/** Puts the copy's build in place of `pkg`'s in two renames; the old one is removed only after. */
function swapIn(pkg: string, copy: string, stamp: string): void {
  writeFileSync(join(copy, 'build', STAMP), stamp)
  const old = join(pkg, `.build-old-${process.pid}`)
  const had = existsSync(join(pkg, 'build'))
  if (had) renameSync(join(pkg, 'build'), old)
  renameSync(join(copy, 'build'), join(pkg, 'build'))
  rmSync(old, { recursive: true, force: true })
  rmSync(copy, { recursive: true, force: true })
}

export function ensureBuild(pkg: string, log: (line: string) => void = console.log): boolean {
  const stamp = sourceStamp(pkg)
  if (stampOf(pkg) === stamp && spawnsTerminal(pkg)) {
    log('node-pty: the build of these sources spawns terminals; kept')
    return true
  }
  log('node-pty: building the (patched) sources in a copy…')
  const built = buildCopy(pkg)
  if ('dir' in built) {
    swapIn(pkg, built.dir, stamp)
    log('node-pty: built, checked and put in place')
    return true
  }
  const kept = existsSync(join(pkg, 'build'))
    ? spawnsTerminal(pkg)
      ? 'the previous build is kept and spawns terminals, but it is not of these (patched) sources'
      : 'the previous build is kept, but it does not spawn terminals either'
    : 'there is no build'
  log(`node-pty: the build failed (${built.error}); ${kept}. Run \`npm run native:build\` once headers and a compiler are available`)
  return false
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exit(ensureBuild(process.argv[2] ?? DEFAULT_PACKAGE) ? 0 : 1)
}
