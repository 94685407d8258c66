/**
 * How every subcommand treats its command line: `--help` / `-h` prints the command's usage on
 * stdout and exits 0; a wrong shape (unknown option, missing or extra arguments, conflicting
 * flags) is a `UsageError`, reported in one line with exit code USAGE_EXIT, as most CLIs do. A
 * well-formed command that cannot run (no token, unreachable server, …) exits 1.
 */
import { self } from './self.ts'

export const USAGE_EXIT = 2

/** The command line itself is wrong: exit USAGE_EXIT. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** A well-formed command that cannot run for a reason the user can fix (no token, bad URL): exit 1. */
export class CommandError extends Error {
  override name = 'CommandError'
}

/** Added to every subcommand's parseArgs options. */
export const HELP_OPTION = { help: { type: 'boolean', short: 'h', default: false } } as const

/** Prints `usage` for `--help`; true when the command should stop there (and exit 0). */
export function printedHelp(values: { help?: boolean }, usage: string, out: NodeJS.WritableStream = process.stdout): boolean {
  if (!values.help) return false
  out.write(usage.endsWith('\n') ? usage : `${usage}\n`)
  return true
}

/** Added to every listing command: one JSON document on stdout instead of lines, for scripts. */
export const JSON_OPTION = { json: { type: 'boolean', default: false } } as const

/** Checks that `command` got exactly the arguments `names` (for the message); returns them. */
export function exactArgs(positionals: readonly string[], names: readonly string[], command: string): string[] {
  if (positionals.length !== names.length) {
    const wanted = names.map((n) => `<${n}>`).join(' ')
    throw new UsageError(`termkeep: ${command} takes ${wanted || 'no arguments'} (\`${self()} ${command} --help\` shows the usage)`)
  }
  return [...positionals]
}

/** Writes `chunk` and waits while the stream is full (a slow pipe holds the command, not memory). */
export function writeOut(out: NodeJS.WritableStream, chunk: string | Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error)
    out.once('error', onError)
    const done = () => {
      out.off('error', onError)
      resolve()
    }
    if (out.write(chunk)) done()
    else out.once('drain', done)
  })
}

/** Prints one JSON document (a listing's `--json` form). */
export function printJson(out: NodeJS.WritableStream, value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`)
}
