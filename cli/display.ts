/**
 * `termkeep display <session> <terminal>`: prints the last persisted display. In colour only on a
 * terminal (not into a pipe or file, and not with NO_COLOR); colourless lines lose their trailing
 * blanks, which carry nothing without a background colour.
 */
import { parseArgs } from 'node:util'
import { displayToLines, readDisplay } from '../web/client/display.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { HELP_OPTION, printedHelp } from './usage.ts'

const USAGE = `usage: termkeep display <session> <terminal> [--plain] [--no-history]

  Prints a terminal's last persisted screen, history included; works after its process exited.
  Colour is used only when stdout is a terminal and NO_COLOR is not set.

  --plain                   no colour, trailing blanks trimmed
  --no-history              only the screen, not the history above it
${TARGET_USAGE}
${REMOTE_USAGE}`

export async function displayCommand(args: string[], out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...REMOTE_OPTIONS,
      ...HELP_OPTION,
      plain: { type: 'boolean', default: false },
      'no-history': { type: 'boolean', default: false },
    },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const target = targetOf(positionals, 'display')
  const client = remoteClient(values)
  const { sessionId, terminalId } = await resolveTarget(client, target)
  const display = await readDisplay(client, sessionId, terminalId)
  const color = !values.plain && out.isTTY === true && !process.env.NO_COLOR
  const text = displayToLines(display, { color, history: !values['no-history'] })
  out.write(color ? text : text.replace(/[ \t]+$/gm, ''))
  return 0
}
