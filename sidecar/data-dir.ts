/**
 * The data directory holds the database, the output journals (every byte every terminal printed)
 * and the sidecar secret: it is created readable by its owner only (0700, as tmux's socket
 * directory), so other local users cannot read screens, journals or token hashes whatever the
 * files' own modes. An existing directory is left as it is (it may be shared on purpose), with
 * one warning when others can enter it.
 */
import { mkdirSync, statSync } from 'node:fs'

/** Creates `dir` (and parents) 0700 if missing; a warning to print when others may read it. */
export function ensureDataDir(dir: string): string | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const mode = statSync(dir).mode & 0o777
  if ((mode & 0o077) === 0) return undefined
  return `the data directory ${dir} is open to other users (mode ${mode.toString(8).padStart(3, '0')}); they can read its screens, journals and token hashes: chmod 700 ${dir}`
}
