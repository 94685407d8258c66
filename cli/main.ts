/**
 * The termkeep command line. Subcommands:
 *   serve                                 start the sidecar and the API (what `npm start` runs)
 *   token create [--name N] [--session ID]... --grant G...
 *                                         mint a token directly in the configured database
 *   ls | new | attach | display           clients of a running server (--url/--token or
 *                                         TERMKEEP_URL/TERMKEEP_TOKEN)
 */
import { parseArgs } from 'node:util'
import { ConfigError, parseConfig } from '../schema/config.ts'
import { attachCommand } from './attach.ts'
import { displayCommand } from './display.ts'
import { lsCommand } from './ls.ts'
import { newCommand } from './new.ts'
import { describeRemoteError, pendingRequestUrl } from './remote.ts'
import { serveCommand } from './serve.ts'
import { tokenCommand } from './token.ts'
import { CommandError, USAGE_EXIT, UsageError } from './usage.ts'

const USAGE = `usage: termkeep <command>

  serve                                   start the sidecar and the API
  token create --grant G [--grant G ...] [--session ID ...] [--name NAME]
                                          mint a token (all sessions unless --session is given)
  ls                                      list workspaces, sessions and terminals
  new [--session ID | --cwd DIR]          start a terminal and attach to it (--detached: only start)
  attach <session> <terminal>             attach this terminal to a remote one (Ctrl-\\ detaches)
  display <session> <terminal> [--plain] [--no-history]
                                          print a terminal's last persisted screen in colour

  Client commands (ls, new, attach, display) take --url URL and --token TOKEN, or read
  TERMKEEP_URL (default http://127.0.0.1:8787) and TERMKEEP_TOKEN.
  \`termkeep <command> --help\` describes one command. Exit codes: 0 done, 1 failed,
  ${USAGE_EXIT} wrong usage; attach exits with the remote shell's exit code when it ends.
`

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  switch (command) {
    case 'serve':
      if (parseArgs({ args: rest, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: false }).values.help) {
        process.stdout.write('usage: termkeep serve   (configured by environment variables; see docs/operations.md)\n')
        return 0
      }
      await serveCommand(parseConfig(process.env))
      return -1 // keeps running
    case 'token':
      return tokenCommand(parseConfig(process.env), rest)
    case 'ls':
      return lsCommand(rest)
    case 'new':
      return newCommand(rest)
    case 'attach':
      return attachCommand(rest)
    case 'display':
      return displayCommand(rest)
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE)
      return 0
    case undefined:
      process.stderr.write(USAGE)
      return USAGE_EXIT
    default:
      process.stderr.write(`termkeep: unknown command "${command}"\n${USAGE}`)
      return USAGE_EXIT
  }
}

/** The one line and the exit code for an error that ended a command. */
function failure(error: unknown, command: string | undefined): [string | unknown, number] {
  if (error instanceof UsageError) return [error.message, USAGE_EXIT]
  if (error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
    return [`termkeep: ${error.message} (\`termkeep ${command} --help\` shows the usage)`, USAGE_EXIT]
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
  console.error(url ? `termkeep: ${url} closed the connection without answering; is it a termkeep server?` : 'termkeep: the command ended without finishing')
  process.exit(1)
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
