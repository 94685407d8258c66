/** `termkeep display <session> <terminal>`: prints the last persisted display, in colour. */
import { parseArgs } from 'node:util'
import { displayToLines, readDisplay } from '../web/client/display.ts'
import { REMOTE_OPTIONS, remoteClient } from './remote.ts'
import { UsageError } from './token.ts'

export async function displayCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, plain: { type: 'boolean', default: false }, 'no-history': { type: 'boolean', default: false } },
  })
  if (positionals.length !== 2) throw new UsageError('termkeep: usage: termkeep display <session> <terminal> [--plain] [--no-history]')
  const [sessionId, terminalId] = positionals
  const display = await readDisplay(remoteClient(values), sessionId, terminalId)
  const color = !values.plain && !process.env.NO_COLOR
  out.write(displayToLines(display, { color, history: !values['no-history'] }))
  return 0
}
