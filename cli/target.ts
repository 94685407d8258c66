/**
 * Which terminal a command means, as people type it (docs/cli.md#targets): `<session> <terminal>`
 * or one `session:terminal`, each part an id or a name (`termkeep attach api`, `termkeep send
 * api:build …`); a session alone means its newest live terminal. The server resolves it
 * (`GET /v1/resolve`), so its answer — which name was not found, which is ambiguous — is the
 * command's error.
 */
import type { ResolvedTarget } from '../schema/wire/names.ts'
import { ApiError, type TermkeepClient } from '../web/client/api.ts'
import { self } from './self.ts'
import { CommandError, UsageError } from './usage.ts'

export const TARGET_USAGE = `  <session> and <terminal> are ids or names (termkeep new -s/-n); one argument session:terminal
  names both (attach and exec also take a session alone: its newest live terminal).`

/** How many leading positionals name the target: one when it is `session:terminal`, else `max`. */
export function targetWords(positionals: readonly string[], max = 2): number {
  return positionals[0]?.includes(':') ? 1 : Math.min(max, positionals.length)
}

/**
 * Pure: the target a command line's words give, as `session[:terminal]`. A session alone (its
 * newest live terminal) only where that is what a user means (`attach api`, `exec api -- make`):
 * a command that closes or exports a terminal is told which one.
 */
export function targetOf(words: readonly string[], command: string, sessionAlone = false): string {
  const one = words.length === 1 && (sessionAlone || /:./.test(words[0]!))
  if (one) return words[0]!
  if (words.length === 2 && !words[0]!.includes(':')) return `${words[0]}:${words[1]}`
  const forms = sessionAlone ? '<session> [<terminal>], or one session:terminal' : '<session> <terminal>, or one session:terminal'
  throw new UsageError(`termkeep: ${command} takes ${forms} (\`${self()} ${command} --help\` shows the usage)`)
}

/**
 * The ids a target names (a session alone: its newest live terminal, else an error). A token that
 * may not resolve names (it holds only, say, observe:process) still reaches a terminal by its ids.
 */
export async function resolveTarget(client: TermkeepClient, target: string): Promise<{ sessionId: string; terminalId: string }> {
  let resolved: ResolvedTarget
  try {
    resolved = await client.json<ResolvedTarget>('GET', `/v1/resolve?${new URLSearchParams({ target })}`)
  } catch (error) {
    const [sessionId, terminalId] = target.split(':')
    if (error instanceof ApiError && error.code === 'auth/forbidden' && sessionId && terminalId) return { sessionId, terminalId }
    throw error
  }
  if (resolved.terminalId === null) throw new CommandError(`termkeep: session ${target} has no live terminal; name one (session:terminal)`)
  return { sessionId: resolved.sessionId, terminalId: resolved.terminalId }
}
