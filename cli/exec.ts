/**
 * `termkeep exec <session> <terminal> [--timeout SECS] [--json] -- COMMAND…`: runs a command in a
 * terminal's existing shell, as typed at its prompt (its directory, variables and history carry
 * over, as in `ssh host cmd` they do not), prints its output as text and exits with its exit code
 * (docs/commands.md). The words after `--` are joined by one space into one command line, so quote
 * it as for `ssh`: `termkeep exec s t -- 'cd src && make'`.
 */
import { parseArgs } from 'node:util'
import { COMMAND_RUN_DEFAULT_TIMEOUT_MS, COMMAND_RUN_MAX_TIMEOUT_MS } from '../schema/limits.ts'
import type { CommandRun } from '../schema/wire/commands.ts'
import { terminalPath } from '../web/client/api.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, REQUEST_TIMEOUT_MS, seconds } from './remote.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { CommandError, HELP_OPTION, printedHelp, UsageError, writeOut } from './usage.ts'

/** The exit code for a command still running at the timeout (as timeout(1) answers). */
export const TIMED_OUT_EXIT = 124

const USAGE = `usage: termkeep exec <session> <terminal> [--timeout SECS] [--json] -- COMMAND ...
       termkeep exec <session>[:<terminal>] ... -- COMMAND ...

  Runs COMMAND in the terminal's shell, typed at its prompt (cd, export and the rest carry over to
  the next one), prints its output as text and exits with its exit code: ${TIMED_OUT_EXIT} when it still
  runs after the timeout (it goes on), 1 when it could not be run (no prompt: a command running, a
  half-typed line, a person in control, a shell without integration; docs/commands.md).
  The words of COMMAND are joined by one space.

  --timeout SECS            wait this long for its end (default ${COMMAND_RUN_DEFAULT_TIMEOUT_MS / 1000}, at most ${COMMAND_RUN_MAX_TIMEOUT_MS / 1000})
  --json                    print the whole answer (record, text, cwd, duration) as JSON
${TARGET_USAGE}
${REMOTE_USAGE}`

export async function execCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, timeout: { type: 'string' }, json: { type: 'boolean', default: false } },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const dash = args.indexOf('--')
  if (dash < 0) throw new UsageError('termkeep: exec needs -- before the command (`termkeep exec --help` shows the usage)')
  const command = args.slice(dash + 1).join(' ')
  const target = targetOf(positionals.slice(0, positionals.length - (args.length - dash - 1)), 'exec', true)
  if (command.trim() === '') throw new UsageError('termkeep: exec needs a command after --')
  const timeoutMs = seconds(values.timeout, '--timeout', COMMAND_RUN_DEFAULT_TIMEOUT_MS)
  if (timeoutMs > COMMAND_RUN_MAX_TIMEOUT_MS) throw new UsageError(`termkeep: --timeout is at most ${COMMAND_RUN_MAX_TIMEOUT_MS / 1000}`)
  // The answer comes when the command ended: the request may take the command's whole time.
  const requestTimeout = seconds(values['request-timeout'], '--request-timeout', REQUEST_TIMEOUT_MS) + timeoutMs
  const client = remoteClient({ ...values, 'request-timeout': String(requestTimeout / 1000) })
  const { sessionId, terminalId } = await resolveTarget(client, target)
  const run = await client.json<CommandRun>('POST', `${terminalPath(sessionId, terminalId)}/commands`, {
    json: { command, timeoutMs: Math.round(timeoutMs) },
  })
  if (values.json) {
    await writeOut(out, `${JSON.stringify(run, null, 2)}\n`)
  } else if (run.text !== '') {
    await writeOut(out, `${run.text}\n`)
  }
  if (run.omittedBytes > 0 && run.command) {
    process.stderr.write(
      `termkeep: the first ${run.omittedBytes} bytes of its output are left out (\`termkeep output ${sessionId} ${terminalId} --command ${run.command.n} --raw\` has them all)\n`,
    )
  }
  if (!run.command) throw new CommandError('termkeep: the shell did not start the command (it came back to its prompt)')
  if (!run.ended) {
    process.stderr.write(`termkeep: command ${run.command.n} still runs after ${timeoutMs / 1000} s; it goes on in the terminal\n`)
    return TIMED_OUT_EXIT
  }
  return exitCodeOf(run.exitCode)
}

/** A shell's exit status as this process's (a status the shell did not report is a failure). */
function exitCodeOf(code: number | null): number {
  if (code === null) return 1
  return code >= 0 && code <= 255 ? code : 1
}
