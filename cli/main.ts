/**
 * The termkeep command line: one table from command name to the function that runs it (each in
 * its own file, each with its own `--help`). `serve` and `token create` work on this machine's
 * configuration; every other command is a client of a running server (--url/--token or
 * TERMKEEP_URL/TERMKEEP_TOKEN).
 */
import { parseArgs } from 'node:util'
import { ConfigError, parseConfig } from '../schema/config.ts'
import { describeRemoteError, pendingRequestUrl } from './remote.ts'
import { REMOTE_TOKEN_COMMANDS } from './token-remote.ts'
import { CommandError, HELP_OPTION, printedHelp, USAGE_EXIT, UsageError } from './usage.ts'
import { self } from './self.ts'

/** A command's run: its exit code, or -1 for one that keeps running (serve). */
type Command = (args: string[]) => Promise<number>

const SERVE_USAGE = `usage: termkeep serve [--api-only | --host-only]

  Starts the sidecar and the API (what npm start runs), configured by environment variables
  (docs/operations.md). Ctrl-C stops both.

  --api-only                the Node API alone, against the sidecar at SIDECAR_URL (SIDECAR_SECRET,
                            or the secret a termkeep serve generated into the data directory)
  --host-only               this machine's sidecar alone: a host joining the fleet's database
                            (DATABASE_URL) with TERMKEEP_HOST_SECRET; the API runs elsewhere`

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...HELP_OPTION, 'api-only': { type: 'boolean', default: false }, 'host-only': { type: 'boolean', default: false } },
    allowPositionals: false,
  })
  if (printedHelp(values, SERVE_USAGE)) return 0
  if (values['api-only'] && values['host-only']) throw new UsageError('termkeep: serve takes --api-only or --host-only, not both')
  const { serveApiOnly, serveCommand, serveHostOnly } = await import('./serve.ts')
  await (values['api-only'] ? serveApiOnly : values['host-only'] ? serveHostOnly : serveCommand)(parseConfig(process.env))
  return -1
}

async function stop(args: string[]): Promise<number> {
  return (await import('./stop.ts')).stopCommand(parseConfig(process.env), args)
}

async function token(args: string[]): Promise<number> {
  if (REMOTE_TOKEN_COMMANDS.has(args[0])) return (await import('./token-remote.ts')).remoteTokenCommand(args)
  return (await import('./token.ts')).tokenCommand(parseConfig(process.env), args)
}

/**
 * Command name → its run. Each module is imported only when its command runs, so a client command
 * starts without loading the server, the database driver or the emulator (~0.3 s each time).
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: async () => serve,
  stop: async () => stop,
  token: async () => token,
  ls: async () => (await import('./ls.ts')).lsCommand,
  workspace: async () => (await import('./workspace.ts')).workspaceCommand,
  new: async () => (await import('./new.ts')).newCommand,
  attach: async () => (await import('./attach.ts')).attachCommand,
  send: async () => (await import('./send.ts')).sendCommand,
  exec: async () => (await import('./exec.ts')).execCommand,
  screen: async () => (await import('./screen.ts')).screenCommand,
  output: async () => (await import('./output.ts')).outputCommand,
  display: async () => (await import('./display.ts')).displayCommand,
  export: async () => (await import('./export.ts')).exportCommand,
  close: async () => (await import('./close.ts')).closeCommand,
  run: async () => (await import('./run.ts')).runCommand,
  ps: async () => (await import('./ps.ts')).psCommand,
  hosts: async () => (await import('./hosts.ts')).hostsCommand,
}

const USAGE = `usage: termkeep <command>

  serve [--api-only | --host-only]        start the sidecar and the API (or the API, or the sidecar,
                                          alone); the sidecar starts the keeper, which holds the
                                          terminals
  stop [--terminals]                      stop serve; --terminals also ends every terminal
  token create --grant G [--grant G ...] [--session ID ...] [--name NAME] [--observe-env NAME ...]
                                          mint a token (all sessions unless --session is given)
  token ls | revoke <id>                  list or revoke tokens (admin)
  ls                                      list workspaces, sessions and terminals
  workspace add <dir> [--host HOST] | ls | rename <id> <title> | rm <id>
                                          manage workspaces (registered directories)
  new [--session S | -s NAME [--host HOST]] [-n NAME]
                                          start a terminal and attach to it (--detached: only start)
  attach <session> <terminal>             attach this terminal to a remote one (Ctrl-\\ detaches)
  send <session> <terminal> [TEXT ...] [--key NAME ...]
                                          type text and keys (tmux names: Enter, C-c, Up, …)
  exec <session> <terminal> -- COMMAND    run a command in the terminal's shell; its output, its exit code
  screen <session> <terminal> [--watch]   print a live terminal's screen as plain text
  output <session> <terminal> [--after N] [--follow] [--raw] [--command N]
                                          print what a terminal printed, from its journal
  display <session> <terminal> [--plain] [--no-history]
                                          print a terminal's last persisted screen in colour
  export <session> <terminal> [-o FILE]   the output as an asciicast v2 recording (asciinema)
  close <session> <terminal>              end a terminal's processes and close it
  run <session> <script.js> [--input JSON]
                                          run a workflow script; stream its events (Ctrl-C cancels)
  ps <session> <terminal> [--json]        a terminal's foreground program and process tree
  hosts [--json] | id | secret|rotate <host-id>  the hosts the server reaches; a host's id, secret, a new secret

  <session> <terminal> is two ids or names, or one session:terminal (attach api, send api:2 …).
  Client commands (all but serve, stop and token create) take --url URL and --token TOKEN, or read
  TERMKEEP_URL (default http://127.0.0.1:8787) and TERMKEEP_TOKEN. Listings take --json.
  \`termkeep <command> --help\` describes one command. Exit codes: 0 done, 1 failed,
  ${USAGE_EXIT} wrong usage; attach exits with the remote shell's exit code when it ends; run exits
  0 / 1 / 130 for a run completed / failed / cancelled.
`

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE)
    return 0
  }
  if (command === undefined) {
    process.stderr.write(USAGE)
    return USAGE_EXIT
  }
  const load = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined
  if (!load) {
    process.stderr.write(`termkeep: unknown command "${command}"\n${USAGE}`)
    return USAGE_EXIT
  }
  return (await load())(rest)
}

/** The one line and the exit code for an error that ended a command. */
function failure(error: unknown, command: string | undefined): [string | unknown, number] {
  if (error instanceof UsageError) return [error.message, USAGE_EXIT]
  if (error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
    return [`termkeep: ${error.message} (\`${self()} ${command} --help\` shows the usage)`, USAGE_EXIT]
  }
  if (error instanceof ConfigError || error instanceof CommandError) return [error.message, 1]
  return [describeRemoteError(error) ?? error, 1]
}

let settled = false
// A request whose connection was dropped in a way fetch never settles leaves nothing for the event
// loop to do: without this the command would end with exit code 0 and no output at all.
process.on('beforeExit', () => {
  if (settled) return
  const url = pendingRequestUrl()
  console.error(
    url
      ? `termkeep: ${url} closed the connection without answering; is it a termkeep server?`
      : 'termkeep: the command ended without finishing',
  )
  process.exit(1)
})
// Output piped into a reader that stopped (`termkeep output … | head`): done, not a crash.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error
  settled = true
  process.exit(0)
})

main(process.argv.slice(2)).then(
  (code) => {
    settled = true
    if (code >= 0) process.exit(code)
  },
  (error: unknown) => {
    settled = true
    const [message, code] = failure(error, process.argv[2])
    console.error(message)
    process.exit(code)
  },
)
