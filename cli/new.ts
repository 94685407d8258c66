/**
 * `termkeep new`: start a terminal and attach to it, as `tmux new` does. In a given session, or in
 * a new session for a directory (this one by default; a path on the server's machine). With
 * `--detached` it only starts the terminal and prints "<session> <terminal>" for `termkeep attach`.
 *
 * A new session joins the workspace of its directory. When there is none yet, `new` registers the
 * directory as one if the token may, and says so; if the server refuses (the token lacks
 * workspaces:write, or registering new directories needs a token bound to all sessions), the
 * session stands alone and `new` says why. Either way the terminal starts.
 */
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { printable } from '../schema/wire/common.ts'
import type { Session } from '../schema/wire/registry.ts'
import { ApiError, type TermkeepClient } from '../web/client/api.ts'
import { CLI_RECONNECT_GIVE_UP_MS } from './tuning.ts'
import { attachTo } from './attach.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, seconds } from './remote.ts'
import { HELP_OPTION, printedHelp, UsageError } from './usage.ts'
import { self } from './self.ts'

/** The size a detached terminal starts with (an attach resizes it to the attaching terminal). */
const DETACHED_GEOMETRY = { cols: 80, rows: 24 }

const USAGE = `usage: termkeep new [--session ID | --cwd DIR [--host HOST]] [--shell PATH] [--title TEXT] [--detached]

  Starts a terminal and attaches this terminal to it (Ctrl-\\ detaches; it keeps running).

  --session ID              start it in this session
  --cwd DIR                 or in a new session for this directory (default: the current one;
                            a path on the server's machine). The session joins the directory's
                            workspace, which is registered first if the token may (it says which)
  --host HOST               the host (id or name, termkeep hosts) the new session lives on; needed
                            when the server reaches several
  --shell PATH              one of the server's shells (default: its default shell)
  --title TEXT              the terminal's title
  --detached                only start it; print "<session> <terminal>" for termkeep attach
  --reconnect-timeout SECS  as for termkeep attach
${REMOTE_USAGE}`

export async function newCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...REMOTE_OPTIONS,
      ...HELP_OPTION,
      session: { type: 'string' },
      cwd: { type: 'string' },
      host: { type: 'string' },
      shell: { type: 'string' },
      title: { type: 'string' },
      detached: { type: 'boolean', default: false },
      'reconnect-timeout': { type: 'string' },
    },
  })
  if (printedHelp(values, USAGE)) return 0
  if (positionals.length > 0) throw new UsageError(`termkeep: new takes no arguments, only options (\`${self()} new --help\` shows them)`)
  if (values.session !== undefined && values.cwd !== undefined) throw new UsageError('termkeep: give --session or --cwd, not both')
  if (values.session !== undefined && values.host !== undefined) {
    throw new UsageError('termkeep: --host places a new session; an existing session (--session) already has its host')
  }
  const giveUpMs = seconds(values['reconnect-timeout'], '--reconnect-timeout', CLI_RECONNECT_GIVE_UP_MS)
  const client = remoteClient(values)
  const sessionId = values.session ?? (await newSession(client, resolve(values.cwd ?? '.'), values.host))
  const terminalId = `t-${randomBytes(6).toString('base64url')}`
  const geometry =
    values.detached || !process.stdout.isTTY ? DETACHED_GEOMETRY : { cols: process.stdout.columns, rows: process.stdout.rows }
  await client.createTerminal(sessionId, terminalId, { ...geometry, shell: values.shell, title: values.title })
  if (values.detached) {
    process.stdout.write(`${sessionId} ${terminalId}\n`)
    return 0
  }
  process.stderr.write(`termkeep: started ${sessionId} ${terminalId}\n`)
  return attachTo(client, sessionId, terminalId, giveUpMs)
}

/** Records a session for `cwd` in its directory's workspace, registering that first if the
 * token may; reports on stderr where the session belongs. */
async function newSession(client: TermkeepClient, cwd: string, host: string | undefined): Promise<string> {
  const session: Session = await client.createSession(cwd, undefined, host)
  if (session.workspaceId !== null) {
    process.stderr.write(`termkeep: session ${session.id} is in workspace ${session.workspaceId} (${printable(session.cwd)})\n`)
    return session.id
  }
  try {
    // Registering the directory adopts the sessions already recorded in it, this one included.
    const { workspace, created } = await client.createWorkspace(session.cwd)
    const joined = workspace.sessionIds.includes(session.id) ? `session ${session.id} is in it` : `session ${session.id} stands alone`
    process.stderr.write(
      `termkeep: ${created ? 'registered' : 'found'} workspace "${printable(workspace.title)}" for ${printable(workspace.path)} [${workspace.id}]; ${joined}\n`,
    )
  } catch (error) {
    if (!(error instanceof ApiError)) throw error
    process.stderr.write(
      `termkeep: session ${session.id} stands alone (in no workspace): the server did not register ${printable(session.cwd)} as a workspace: ${error.message} (${error.code}); \`${self()} workspace add DIR\` with a token that may registers it\n`,
    )
  }
  return session.id
}
