/**
 * How to run this command line again, in a form that works in the shell that runs it: every hint
 * the CLI prints (`… --help shows the usage`, `display S T prints its last screen`, `token create
 * mints one`) starts with it. `termkeep` when the `termkeep` on PATH is this installation (after
 * `npm link`, or an installed package); else the clone's launcher by path: `./termkeep` from the
 * clone itself, a relative path below the current directory, an absolute one elsewhere.
 */
import { accessSync, constants, realpathSync } from 'node:fs'
import { delimiter, isAbsolute, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package's root directory and its launcher (`./termkeep`, beside package.json). */
export const ROOT = fileURLToPath(new URL('../', import.meta.url))
export const LAUNCHER = join(ROOT, 'termkeep')

/** The first executable `termkeep` on `path`, resolved through its symlinks. */
function onPath(path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir) continue
    const candidate = join(dir, 'termkeep')
    try {
      accessSync(candidate, constants.X_OK)
      return realpathSync(candidate)
    } catch {}
  }
  return undefined
}

/**
 * Pure but for the file system: the command for `env`'s PATH, seen from `cwd` (npm sets INIT_CWD
 * to the directory `npm start` was typed in; the process itself runs in the package root).
 */
export function commandFor(env: NodeJS.ProcessEnv, cwd: string): string {
  const found = onPath(env.PATH)
  const root = realpathSync(ROOT)
  if (found && (found + sep).startsWith(root.endsWith(sep) ? root : root + sep)) return 'termkeep'
  const rel = relative(cwd, LAUNCHER)
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? LAUNCHER : `.${sep}${rel}`
}

let cached: string | undefined

/** The command for this process's PATH and directory (computed once). */
export function self(): string {
  cached ??= commandFor(process.env, process.env.INIT_CWD || process.cwd())
  return cached
}
