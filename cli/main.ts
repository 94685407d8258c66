/**
 * The termkeep command line. Subcommands:
 *   serve                                 start the sidecar and the API (what `npm start` runs)
 *   token create [--name N] [--session ID]... --grant G...
 *                                         mint a token directly in the configured database
 *   ls | attach | display                 clients of a running server (--url/--token or
 *                                         TERMKEEP_URL/TERMKEEP_TOKEN)
 */
import { parseArgs } from 'node:util'
import { ConfigError, parseConfig } from '../schema/config.ts'
import { attachCommand } from './attach.ts'
import { displayCommand } from './display.ts'
import { lsCommand } from './ls.ts'
import { describeRemoteError } from './remote.ts'
import { serveCommand } from './serve.ts'
import { tokenCommand } from './token.ts'

const USAGE = `usage: termkeep <command>

  serve                                   start the sidecar and the API
  token create --grant G [--grant G ...] [--session ID ...] [--name NAME]
                                          mint a token (all sessions unless --session is given)
  ls                                      list workspaces, sessions and terminals
  attach <session> <terminal>             attach this terminal to a remote one (Ctrl-\\ detaches)
  display <session> <terminal> [--plain] [--no-history]
                                          print a terminal's last persisted screen in colour

  Client commands (ls, attach, display) take --url URL and --token TOKEN, or read
  TERMKEEP_URL (default http://127.0.0.1:8787) and TERMKEEP_TOKEN.
`

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  switch (command) {
    case 'serve':
      parseArgs({ args: rest, options: {}, allowPositionals: false })
      await serveCommand(parseConfig(process.env))
      return -1 // keeps running
    case 'token':
      return tokenCommand(parseConfig(process.env), rest)
    case 'ls':
      return lsCommand(rest)
    case 'attach':
      return attachCommand(rest)
    case 'display':
      return displayCommand(rest)
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE)
      return command === undefined ? 2 : 0
    default:
      process.stderr.write(`termkeep: unknown command "${command}"\n${USAGE}`)
      return 2
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code)
  },
  (error: unknown) => {
    const message = error instanceof ConfigError || (error instanceof Error && error.name === 'UsageError')
      ? error.message
      : error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')
        ? `termkeep: ${error.message}`
        : (describeRemoteError(error) ?? error)
    console.error(message)
    process.exit(1)
  },
)
