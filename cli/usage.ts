/**
 * How every subcommand treats its command line: `--help` / `-h` prints the command's usage on
 * stdout and exits 0; a wrong shape (unknown option, missing or extra arguments, conflicting
 * flags) is a `UsageError`, reported in one line with exit code USAGE_EXIT, as most CLIs do. A
 * well-formed command that cannot run (no token, unreachable server, …) exits 1.
 */

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
