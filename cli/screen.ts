/**
 * `termkeep screen <session> <terminal> [--watch]`: the plain-text projection of a live terminal's
 * screen (what an agent reads; no colours), as `tmux capture-pane -p` prints a pane. With --watch
 * it follows the screen until the terminal's output ends: redrawn in place on a terminal, one
 * frame after another (separated by a form feed line) into a pipe, one JSON object per line with
 * --json.
 */
import { parseArgs } from 'node:util'
import type { ScreenProjection } from '../schema/wire/display.ts'
import { terminalPath } from '../web/client/api.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { HELP_OPTION, JSON_OPTION, printedHelp, printJson, writeOut } from './usage.ts'

const USAGE = `usage: termkeep screen <session> <terminal> [--history] [--watch] [--json]

  Prints a live terminal's screen as plain text (no colours or styles; trailing blank lines
  dropped). For the last saved screen in colour, also after the process ended: termkeep display.

  --history                 the recent history above the screen too
  --watch                   keep printing it as it changes, until the terminal's output ends:
                            redrawn in place on a terminal; into a pipe, each screen follows a
                            form-feed line (\\f)
  --json                    the projection as JSON ({cols, rows, lines, viewportStart, cursor,
                            sequence, …}); with --watch one JSON object per line
${TARGET_USAGE}
${REMOTE_USAGE}`

/** Pure: the projection's text, the viewport only unless `history`. */
export function screenText(screen: ScreenProjection, history: boolean): string {
  const lines = history ? screen.lines : screen.lines.slice(screen.viewportStart)
  let end = lines.length
  while (end > 0 && lines[end - 1] === '') end--
  return lines
    .slice(0, end)
    .map((line) => `${line}\n`)
    .join('')
}

/** Clear the screen and home the cursor: a redraw in place. */
const REDRAW = '\x1b[H\x1b[2J'

export async function screenCommand(args: string[], out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...REMOTE_OPTIONS,
      ...HELP_OPTION,
      ...JSON_OPTION,
      history: { type: 'boolean', default: false },
      watch: { type: 'boolean', default: false },
    },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const target = targetOf(positionals, 'screen')
  const client = remoteClient(values)
  const { sessionId, terminalId } = await resolveTarget(client, target)
  if (!values.watch) {
    const screen = await client.screen(sessionId, terminalId)
    if (values.json) printJson(out, screen)
    else out.write(screenText(screen, values.history))
    return 0
  }
  const events = await client.stream(`${terminalPath(sessionId, terminalId)}/screen/watch`)
  let frames = 0
  for await (const event of events) {
    if (event.event === 'closed') break
    if (event.event !== 'screen') continue
    const screen = JSON.parse(event.data) as ScreenProjection
    if (values.json) await writeOut(out, `${JSON.stringify(screen)}\n`)
    else if (out.isTTY) await writeOut(out, REDRAW + screenText(screen, values.history))
    else await writeOut(out, `${frames > 0 ? '\f\n' : ''}${screenText(screen, values.history)}`)
    frames++
  }
  return 0
}
