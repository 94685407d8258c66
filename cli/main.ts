/**
 * The termkeep command line. Subcommands:
 *   serve                                 start the sidecar and the API (what `npm start` runs)
 *   token create [--name N] [--session ID]... --grant G...
 *                                         mint a token directly in the configured database
 */
import { parseArgs } from 'node:util'
import { ConfigError, parseConfig } from '../schema/config.ts'
import { serveCommand } from './serve.ts'
import { tokenCommand } from './token.ts'

const USAGE = `usage: termkeep <command>

  serve                                   start the sidecar and the API
  token create --grant G [--grant G ...] [--session ID ...] [--name NAME]
                                          mint a token (all sessions unless --session is given)
`

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  const config = parseConfig(process.env)
  switch (command) {
    case 'serve':
      parseArgs({ args: rest, options: {}, allowPositionals: false })
      await serveCommand(config)
      return -1 // keeps running
    case 'token':
      return tokenCommand(config, rest)
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
        : error
    console.error(message)
    process.exit(1)
  },
)
