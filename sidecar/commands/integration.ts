/**
 * Shell integration as a pure step of spawning (docs/commands.md): a spawn spec in, the same spec
 * with termkeep's integration injected out, the way VS Code injects its own. Only an interactive
 * bash, zsh or fish (no arguments: not `-c command`) gets it; every other program is spawned as
 * given and says `commandMarks: 'none'` until a prompt of its own emits marks.
 *
 *   bash  `--init-file shell/termkeep.bash`: sources ~/.bashrc as bash would, then adds the marks
 *   zsh   ZDOTDIR=shell/zsh: shims that source the user's own .zshenv/.zshrc (their ZDOTDIR kept
 *         in TERMKEEP_USER_ZDOTDIR), then add the marks
 *   fish  `--init-command 'source …/termkeep.fish'`, after the user's configuration
 *
 * The nonce travels in a file (TERMKEEP_SHELL_NONCE_FILE names it) that the script reads and
 * deletes before any of the user's code runs (for fish: after config.fish): the shell's initial
 * environment, which /proc/<pid>/environ shows for its whole life, holds only the file's name.
 */
import { basename } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { CommandMarks } from '../../schema/wire/terminals.ts'

/** Where the scripts are (this folder's `shell/`, shipped with the sidecar). */
export const SHELL_SCRIPTS_DIR = fileURLToPath(new URL('./shell/', import.meta.url))

export const NONCE_FILE_VARIABLE = 'TERMKEEP_SHELL_NONCE_FILE'
export const USER_ZDOTDIR_VARIABLE = 'TERMKEEP_USER_ZDOTDIR'

/** What a PTY is spawned with. */
export interface SpawnSpec {
  file: string
  args: string[]
  env: Record<string, string>
}

export const INTEGRATED_SHELLS = ['bash', 'zsh', 'fish'] as const
export type IntegratedShell = (typeof INTEGRATED_SHELLS)[number]

/** The shell termkeep integrates, by the executable's name, when it is started interactively. */
export function integratedShell(spec: Pick<SpawnSpec, 'file' | 'args'>): IntegratedShell | undefined {
  if (spec.args.length > 0) return undefined
  const name = basename(spec.file)
  return (INTEGRATED_SHELLS as readonly string[]).includes(name) ? (name as IntegratedShell) : undefined
}

/**
 * Pure: `spec` with the integration for its shell, and what the terminal's command marks will be.
 * `nonceFile` is the file holding the terminal's nonce (the caller writes it, mode 0600, before
 * the spawn); `scripts` defaults to the shipped ones.
 */
export function withShellIntegration(
  spec: SpawnSpec,
  nonceFile: string,
  scripts = SHELL_SCRIPTS_DIR,
): { spec: SpawnSpec; commandMarks: CommandMarks } {
  const shell = integratedShell(spec)
  if (!shell) return { spec, commandMarks: 'none' }
  const env: Record<string, string> = { ...spec.env, [NONCE_FILE_VARIABLE]: nonceFile }
  switch (shell) {
    case 'bash':
      return { spec: { ...spec, args: ['--init-file', `${scripts}termkeep.bash`], env }, commandMarks: 'injected' }
    case 'zsh': {
      const { ZDOTDIR: user, ...rest } = env
      const zsh = { ...rest, ZDOTDIR: `${scripts}zsh`, ...(user === undefined ? {} : { [USER_ZDOTDIR_VARIABLE]: user }) }
      return { spec: { ...spec, env: zsh }, commandMarks: 'injected' }
    }
    case 'fish':
      // The path goes through the environment: no quoting of a data directory's name in fish syntax.
      return {
        spec: {
          ...spec,
          args: ['--init-command', 'source "$TERMKEEP_SHELL_SCRIPT"; set -e TERMKEEP_SHELL_SCRIPT'],
          env: { ...env, TERMKEEP_SHELL_SCRIPT: `${scripts}termkeep.fish` },
        },
        commandMarks: 'injected',
      }
  }
}
