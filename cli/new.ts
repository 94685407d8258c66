/**
 * `termkeep new`: start a terminal and attach to it, as `tmux new` does. In a given session, or in
 * a new session for a directory (this one by default; a path on the server's machine). With
 * `--detached` it only starts the terminal and prints "<session> <terminal>" for `termkeep attach`.
 */
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { attachTo, RECONNECT_GIVE_UP_MS } from './attach.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, seconds } from './remote.ts'
import { HELP_OPTION, printedHelp, UsageError } from './usage.ts'

/** The size a detached terminal starts with (an attach resizes it to the attaching terminal). */
const DETACHED_GEOMETRY = { cols: 80, rows: 24 }

const USAGE = `usage: termkeep new [--session ID | --cwd DIR] [--shell PATH] [--title TEXT] [--detached]

  Starts a terminal and attaches this terminal to it (Ctrl-\\ detaches; it keeps running).

  --session ID              start it in this session
  --cwd DIR                 or in a new session for this directory (default: the current one;
                            a path on the server's machine)
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
      shell: { type: 'string' },
      title: { type: 'string' },
      detached: { type: 'boolean', default: false },
      'reconnect-timeout': { type: 'string' },
    },
  })
  if (printedHelp(values, USAGE)) return 0
  if (positionals.length > 0) throw new UsageError('termkeep: new takes no arguments, only options (`termkeep new --help` shows them)')
  if (values.session !== undefined && values.cwd !== undefined) throw new UsageError('termkeep: give --session or --cwd, not both')
  const giveUpMs = seconds(values['reconnect-timeout'], '--reconnect-timeout', RECONNECT_GIVE_UP_MS)
  const client = remoteClient(values)
  const sessionId = values.session ?? (await client.createSession(resolve(values.cwd ?? '.'))).id
  const terminalId = `t-${randomBytes(6).toString('base64url')}`
  const geometry = values.detached || !process.stdout.isTTY ? DETACHED_GEOMETRY : { cols: process.stdout.columns, rows: process.stdout.rows }
  await client.createTerminal(sessionId, terminalId, { ...geometry, shell: values.shell, title: values.title })
  if (values.detached) {
    process.stdout.write(`${sessionId} ${terminalId}\n`)
    return 0
  }
  process.stderr.write(`termkeep: started ${sessionId} ${terminalId}\n`)
  return attachTo(client, sessionId, terminalId, giveUpMs)
}
