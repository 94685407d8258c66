/**
 * `termkeep export <session> <terminal> [-o FILE]`: the terminal's output so far as an asciicast v2
 * recording (`GET …/output.cast`), for `asciinema play`, `asciinema cat` or asciinema's web player.
 * Streamed to stdout as it arrives; with -o into FILE, which appears only once the recording is
 * complete (a transfer cut off leaves no half file behind).
 */
import { createWriteStream, renameSync, rmSync } from 'node:fs'
import { finished } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import { ASCIICAST_CONTENT_TYPE } from '../schema/wire/output.ts'
import { terminalPath } from '../web/client/api.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { CommandError, HELP_OPTION, printedHelp, writeOut } from './usage.ts'

const USAGE = `usage: termkeep export <session> <terminal> [-o FILE]

  Writes the terminal's output so far as an asciicast v2 recording (asciinema's format), with
  every resize and the time each output arrived:
    termkeep export S T > session.cast && asciinema play session.cast
  Works while the terminal runs (the recording ends where its output was when asked) and after
  its process exited, until the terminal is closed.

  -o, --output FILE         write to FILE (created only once the recording is complete)
${TARGET_USAGE}
${REMOTE_USAGE}`

export async function exportCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, output: { type: 'string', short: 'o' } },
  })
  if (printedHelp(values, USAGE)) return 0
  const target = targetOf(positionals, 'export')
  const client = remoteClient(values)
  const { sessionId, terminalId } = await resolveTarget(client, target)
  const response = await client.request('GET', `${terminalPath(sessionId, terminalId)}/output.cast`, {
    headers: { accept: ASCIICAST_CONTENT_TYPE },
  })
  if (!response.body) throw new CommandError('termkeep: the server sent no recording')
  const partial = values.output === undefined ? undefined : `${values.output}.partial`
  const out = partial === undefined ? process.stdout : createWriteStream(partial, { mode: 0o644 })
  try {
    for await (const chunk of response.body) await writeOut(out, chunk)
  } catch (error) {
    if (partial !== undefined) rmSync(partial, { force: true })
    throw new CommandError(
      `termkeep: the recording was cut off: ${(error as Error).message}${partial === undefined ? '' : `; ${values.output} was not written`}`,
    )
  }
  if (partial !== undefined && values.output !== undefined) {
    out.end()
    await finished(out)
    renameSync(partial, values.output)
  }
  return 0
}
