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
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { printable } from '../schema/wire/common.ts'
import type { Session } from '../schema/wire/registry.ts'
import type { ResolvedTarget } from '../schema/wire/names.ts'
import { ApiError, type TermkeepClient, terminalPath } from '../web/client/api.ts'
import { CLI_RECONNECT_GIVE_UP_MS } from './tuning.ts'
import { attachTo } from './attach.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, seconds } from './remote.ts'
import { HELP_OPTION, printedHelp, UsageError } from './usage.ts'
import { self } from './self.ts'

/** The size a detached terminal starts with (an attach resizes it to the attaching terminal). */
const DETACHED_GEOMETRY = { cols: 80, rows: 24 }

const USAGE = `usage: termkeep new [--session ID|NAME | [-s NAME] [--cwd DIR] [--host HOST]] [-n NAME] [--shell PATH] [--title TEXT] [--detached]

  Starts a terminal and attaches this terminal to it (Ctrl-\\ detaches; it keeps running). Its id
  is the next number in its session (1, 2, 3 …), so \`termkeep attach api:2\` finds it.

  --session ID|NAME         start it in this session
  --cwd DIR                 or in a new session for this directory (default: the current one;
                            a path on the server's machine). The session joins the directory's
                            workspace, which is registered first if the token may (it says which)
  -s, --session-name NAME   the new session's name (as tmux new -s): \`termkeep attach NAME\`
  --host HOST               the host (id or name, termkeep hosts) the new session lives on; needed
                            when the server reaches several
  -n, --name NAME           the terminal's name (as tmux new -n), unique in its session
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
      'session-name': { type: 'string', short: 's' },
      name: { type: 'string', short: 'n' },
      shell: { type: 'string' },
      title: { type: 'string' },
      detached: { type: 'boolean', default: false },
      'reconnect-timeout': { type: 'string' },
    },
  })
  if (printedHelp(values, USAGE)) return 0
  if (positionals.length > 0) throw new UsageError(`termkeep: new takes no arguments, only options (\`${self()} new --help\` shows them)`)
  if (values.session !== undefined && values.cwd !== undefined) throw new UsageError('termkeep: give --session or --cwd, not both')
  if (values.session !== undefined && values['session-name'] !== undefined)
    throw new UsageError('termkeep: --session-name names a new session: not with --session')
  if (values.session !== undefined && values.host !== undefined) {
    throw new UsageError('termkeep: --host places a new session; an existing session (--session) already has its host')
  }
  const giveUpMs = seconds(values['reconnect-timeout'], '--reconnect-timeout', CLI_RECONNECT_GIVE_UP_MS)
  const client = remoteClient(values)
  const sessionId =
    values.session !== undefined
      ? (await client.json<ResolvedTarget>('GET', `/v1/resolve?${new URLSearchParams({ target: values.session })}`)).sessionId
      : await newSession(client, resolve(values.cwd ?? '.'), { name: values['session-name'], host: values.host })
  const geometry =
    values.detached || !process.stdout.isTTY ? DETACHED_GEOMETRY : { cols: process.stdout.columns, rows: process.stdout.rows }
  const terminalId = await createNumbered(client, sessionId, { ...geometry, shell: values.shell, title: values.title, name: values.name })
  if (values.detached) {
    process.stdout.write(`${sessionId} ${terminalId}\n`)
    return 0
  }
  process.stderr.write(`termkeep: started ${sessionId} ${terminalId}\n`)
  return attachTo(client, sessionId, terminalId, giveUpMs)
}

/** Ids `new` tries past a number taken meanwhile (another `new` in the same session). */
const NUMBER_TRIES = 32

/**
 * Creates the terminal under the session's next number (one past its highest numeric id, as tmux
 * numbers windows). Create is idempotent on the id, so a number another client took meanwhile
 * answers 200 (or 409 once closed): then the next one is tried.
 */
async function createNumbered(client: TermkeepClient, sessionId: string, body: Record<string, unknown>): Promise<string> {
  const numbers = (await client.terminals(sessionId)).map((t) => (/^\d{1,9}$/.test(t.id) ? Number(t.id) : 0))
  let next = Math.max(0, ...numbers) + 1
  for (let tries = 0; tries < NUMBER_TRIES; tries++, next++) {
    try {
      const response = await client.request('PUT', terminalPath(sessionId, String(next)), { json: body })
      await response.body?.cancel()
      if (response.status === 201) return String(next)
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 'terminal/closed')) throw error
    }
  }
  throw new Error(`no free terminal number in session ${sessionId} after ${NUMBER_TRIES} tries`)
}

/** Records a session for `cwd` in its directory's workspace, registering that first if the
 * token may; reports on stderr where the session belongs. */
async function newSession(client: TermkeepClient, cwd: string, placed: { name?: string; host?: string }): Promise<string> {
  const json = { cwd, ...(placed.name ? { name: placed.name } : {}), ...(placed.host === undefined ? {} : { host: placed.host }) }
  const session: Session = (await client.json<{ session: Session }>('POST', '/v1/sessions', { json })).session
  if (session.workspaceId !== null) {
    process.stderr.write(`termkeep: session ${session.id} is in workspace ${session.workspaceId} (${printable(session.cwd)})\n`)
    return session.id
  }
  try {
    // Registering the directory adopts the sessions already recorded in it, this one included.
    const { workspace, created } = await client.createWorkspace(session.cwd, undefined, session.host ?? undefined)
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
