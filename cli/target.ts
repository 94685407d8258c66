/**
 * Which terminal a command means, as people type it (docs/cli.md#targets): `<session> <terminal>`
 * or one `session:terminal`, each part an id or a name (`termkeep attach api`, `termkeep send
 * api:build …`); a session alone means its newest live terminal. The server resolves it
 * (`GET /v1/resolve`), so its answer — which name was not found, which is ambiguous — is the
 * command's error.
 */
import type { ResolvedTarget } from '../schema/wire/names.ts'
import type { TermkeepClient } from '../web/client/api.ts'
import { CommandError, UsageError } from './usage.ts'

export const TARGET_USAGE = `  <session> and <terminal> are ids or names (termkeep new --name); one argument
  session:terminal names both, and a session alone its newest live terminal.`

/** How many leading positionals name the target: one when it is `session:terminal`, else `max`. */
export function targetWords(positionals: readonly string[], max = 2): number {
  return positionals[0]?.includes(':') ? 1 : Math.min(max, positionals.length)
}

/** Pure: the target a command line's words give, as `session[:terminal]`. */
export function targetOf(words: readonly string[], command: string): string {
  if (words.length === 1) return words[0]!
  if (words.length === 2 && !words[0]!.includes(':')) return `${words[0]}:${words[1]}`
  throw new UsageError(
    `termkeep: ${command} takes <session> <terminal>, or one session:terminal (\`termkeep ${command} --help\` shows the usage)`,
  )
}

/** The ids a target names (a session alone: its newest live terminal, else an error). */
export async function resolveTarget(client: TermkeepClient, target: string): Promise<{ sessionId: string; terminalId: string }> {
  const resolved = await client.json<ResolvedTarget>('GET', `/v1/resolve?${new URLSearchParams({ target })}`)
  if (resolved.terminalId === null) throw new CommandError(`termkeep: session ${target} has no live terminal; name one (session:terminal)`)
  return { sessionId: resolved.sessionId, terminalId: resolved.terminalId }
}
