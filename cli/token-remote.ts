/**
 * `termkeep token ls` and `termkeep token revoke <id>`: token management through a running server
 * (grant admin, on a token bound to all sessions). `token create` mints into the database
 * directly instead (cli/token.ts), so that the first token needs no server.
 */
import { parseArgs } from 'node:util'
import { printable } from '../schema/wire/common.ts'
import type { TokenRecord } from '../schema/wire/tokens.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { exactArgs, HELP_OPTION, JSON_OPTION, printedHelp, printJson, UsageError } from './usage.ts'
import { self } from './self.ts'

/** The token subcommands that go through a server. */
export const REMOTE_TOKEN_COMMANDS: ReadonlySet<string | undefined> = new Set(['ls', 'revoke'])

const USAGE = `usage: termkeep token ls [--json]
       termkeep token revoke <id>

  ls        the active tokens (never their secrets): id, name, sessions, grants, expiry
  revoke    revokes a token at once; its open streams end at their next heartbeat
  Both need a token with the admin grant, bound to all sessions.

  --json                    the listing as JSON ({tokens: [...]})
${REMOTE_USAGE}`

const day = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z')

/** "tok_…  reader  sessions: s1, s2  grants: workspaces:read  created …  expires …" */
function tokenLine(token: TokenRecord): string {
  const sessions = token.sessions === 'all' ? 'all sessions' : `sessions: ${token.sessions.join(', ')}`
  const expires = token.expiresAt === null ? '' : `  expires ${day(token.expiresAt)}`
  // Older servers list no observeEnvironment.
  const observes = token.observeEnvironment?.length ? `  observes: ${token.observeEnvironment.join(', ')}` : ''
  return `${token.id}  ${printable(token.name)}  ${sessions}  grants: ${token.grants.join(', ')}${observes}  created ${day(token.createdAt)}${expires}`
}

export async function remoteTokenCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, ...JSON_OPTION },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const [action, ...rest] = positionals
  if (action === 'ls') {
    exactArgs(rest, [], 'token ls')
    const tokens = await remoteClient(values).tokens()
    if (values.json) printJson(out, { tokens })
    else for (const token of tokens) out.write(`${tokenLine(token)}\n`)
    return 0
  }
  if (action === 'revoke') {
    const [id] = exactArgs(rest, ['id'], 'token revoke')
    await remoteClient(values).revokeToken(id)
    out.write(`revoked token ${id}\n`)
    return 0
  }
  throw new UsageError(`termkeep: token takes create, ls or revoke (\`${self()} token --help\` shows the usage)`)
}
