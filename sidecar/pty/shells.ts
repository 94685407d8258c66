/**
 * Installed shells: the entries of /etc/shells (or TERMKEEP_SHELLS_FILE) that exist as
 * executable regular files, in file order without duplicates, the default first. The default is
 * chosen as tmux does: $SHELL, else the account's login shell (passwd), when it is one of them;
 * else the first. Nothing else may be spawned.
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs'
import { userInfo } from 'node:os'
import { basename } from 'node:path'
import type { TerminalShell } from '../../schema/wire/terminals.ts'

export const DEFAULT_SHELLS_FILE = '/etc/shells'
const FALLBACK: TerminalShell = { path: '/bin/sh', args: [], name: 'sh' }

function executable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** $SHELL, else the login shell from the user database (a service or CI job often has no $SHELL). */
export function preferredShell(): string | undefined {
  if (process.env.SHELL) return process.env.SHELL
  try {
    return userInfo().shell ?? undefined
  } catch {
    return undefined // no passwd entry for this uid (e.g. an arbitrary container user)
  }
}

export function listShells(shellsFile = DEFAULT_SHELLS_FILE, preferred = preferredShell()): TerminalShell[] {
  let text = ''
  try {
    text = readFileSync(shellsFile, 'utf8')
  } catch {
    // no shells file: fall back below
  }
  const seen = new Set<string>()
  const shells: TerminalShell[] = []
  for (const line of text.split('\n')) {
    const path = line.trim()
    if (!path.startsWith('/') || seen.has(path)) continue
    seen.add(path)
    if (executable(path)) shells.push({ path, args: [], name: basename(path) })
  }
  if (shells.length === 0 && executable(FALLBACK.path)) shells.push(FALLBACK)
  const index = shells.findIndex((s) => s.path === preferred)
  if (index > 0) shells.unshift(...shells.splice(index, 1))
  return shells
}
