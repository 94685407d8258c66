/**
 * `termkeep close <session> <terminal>`: closes a terminal, as `tmux kill-pane` does: its whole
 * process group is ended and the terminal is retired once its output was delivered. Closing a
 * closed terminal succeeds again; its last screen stays readable with `termkeep display`.
 */
import { parseArgs } from 'node:util'
import { endedText } from '../web/client/labels.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { HELP_OPTION, JSON_OPTION, printedHelp, printJson } from './usage.ts'

const USAGE = `usage: termkeep close <session> <terminal> [--json]

  Ends the terminal's processes (its whole process group) and closes it. Closing it again
  succeeds. Its last screen stays readable with termkeep display.

  --json                    print the server's answer ({closed, info}) as JSON
${TARGET_USAGE}
${REMOTE_USAGE}`

export async function closeCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, ...JSON_OPTION },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const target = targetOf(positionals, 'close')
  const client = remoteClient(values)
  const { sessionId, terminalId } = await resolveTarget(client, target)
  const result = await client.closeTerminal(sessionId, terminalId)
  if (values.json) printJson(out, result)
  // "was closed", with how its shell had ended when it had exited before (never "signal 1": that
  // is the hangup the close itself sent).
  else out.write(`${sessionId}/${terminalId} ${endedText(result.info)}\n`)
  return 0
}
