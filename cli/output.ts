/**
 * `termkeep output <session> <terminal> [--after N] [--follow] [--raw]`: the bytes a terminal
 * printed, from its journal, to stdout. By default as text (one streaming UTF-8 decoder over the
 * whole output, so a character split across records comes out whole; bytes that are not UTF-8
 * become U+FFFD); with --raw the exact bytes. Escape sequences (colours, cursor movement) are part
 * of the output either way. With --follow it keeps printing what comes, until the terminal's output
 * ends, and resumes by itself after a network loss.
 */
import { parseArgs } from 'node:util'
import type { CommandOutput } from '../schema/wire/commands.ts'
import type { OutputPage } from '../schema/wire/output.ts'
import { ApiError, terminalPath } from '../web/client/api.ts'
import { CLI_RECONNECT_GIVE_UP_MS } from './tuning.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, seconds, type CliClient } from './remote.ts'
import { CommandError, HELP_OPTION, printedHelp, UsageError, writeOut } from './usage.ts'

const USAGE = `usage: termkeep output <session> <terminal> [--after N] [--follow] [--raw]
       termkeep output <session> <terminal> --command N [--raw]

  Prints what the terminal printed, from the first byte (or after sequence N), as recorded.
  Text by default (UTF-8 decoded; escape sequences included); --raw writes the exact bytes.

  --command N               only command N's output (docs/commands.md): as plain text (its last
                            64 KiB, kept after the terminal ended), or with --raw its exact
                            bytes (while the terminal lives)

  --after N                 only what came after native record N (a sequence from an earlier
                            run, or from \`termkeep screen --json\`)
  --follow                  keep printing new output until the terminal's output ends
  --raw                     the exact bytes, undecoded (e.g. into a file or another terminal)
  --reconnect-timeout SECS  with --follow: give up after this long without the server
                            (default ${CLI_RECONNECT_GIVE_UP_MS / 1000})
${TARGET_USAGE}
${REMOTE_USAGE}`

/** Items per readOutput page. */
const PAGE_ITEMS = 256
/** Backoff between reconnection attempts of --follow. */
const RETRY_MS = [250, 500, 1000, 2000, 4000]

/** Where the bytes go: exact, or through one streaming UTF-8 decoder. */
class Sink {
  readonly #decoder: TextDecoder | undefined
  constructor(
    private readonly out: NodeJS.WritableStream,
    raw: boolean,
  ) {
    this.#decoder = raw ? undefined : new TextDecoder('utf-8', { ignoreBOM: true }) // a printed BOM is output too
  }

  write(bytes: Uint8Array): Promise<void> {
    if (!this.#decoder) return writeOut(this.out, bytes)
    const text = this.#decoder.decode(bytes, { stream: true })
    return text === '' ? Promise.resolve() : writeOut(this.out, text)
  }

  async end(): Promise<void> {
    const rest = this.#decoder?.decode() ?? ''
    if (rest !== '') await writeOut(this.out, rest)
  }
}

export async function outputCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...REMOTE_OPTIONS,
      ...HELP_OPTION,
      after: { type: 'string' },
      follow: { type: 'boolean', default: false },
      raw: { type: 'boolean', default: false },
      command: { type: 'string' },
      'reconnect-timeout': { type: 'string' },
    },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const target = targetOf(positionals, 'output')
  if (values.after !== undefined && !/^\d{1,15}$/.test(values.after))
    throw new UsageError(`termkeep: --after takes a sequence number (got "${values.after}")`)
  if (values.command !== undefined && !/^[1-9]\d{0,14}$/.test(values.command))
    throw new UsageError(`termkeep: --command takes a command number (got "${values.command}")`)
  if (values.command !== undefined && (values.after !== undefined || values.follow))
    throw new UsageError('termkeep: --command reads one command: not with --after or --follow')
  const giveUpMs = seconds(values['reconnect-timeout'], '--reconnect-timeout', CLI_RECONNECT_GIVE_UP_MS)
  const client = remoteClient(values)
  const { sessionId, terminalId } = await resolveTarget(client, target)
  if (values.command !== undefined)
    return commandOutput(client, `${terminalPath(sessionId, terminalId)}/commands/${values.command}`, values.raw, out)
  const sink = new Sink(out, values.raw)
  const after = Number(values.after ?? 0)
  const last = values.follow
    ? await followOutput(client, sessionId, terminalId, after, sink, giveUpMs)
    : await readPages(client, sessionId, terminalId, after, sink)
  await sink.end()
  // Where a later run can go on from; only for a person at a terminal, never into a script's stderr.
  if (process.stderr.isTTY) process.stderr.write(`termkeep: through sequence ${last} (\`--after ${last}\` goes on from here)\n`)
  return 0
}

/** One command's output: its text (with a newline after it), or its exact bytes. */
async function commandOutput(client: CliClient, path: string, raw: boolean, out: NodeJS.WritableStream): Promise<number> {
  if (raw) {
    const response = await client.request('GET', `${path}/output.bin`, { headers: { accept: 'application/octet-stream' } })
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) await writeOut(out, chunk)
    return 0
  }
  const { text, omittedBytes } = await client.json<CommandOutput>('GET', `${path}/output`)
  if (text !== '') await writeOut(out, `${text}\n`)
  if (omittedBytes > 0) process.stderr.write(`termkeep: the first ${omittedBytes} bytes of its output are left out (--raw has them all)\n`)
  return 0
}

/** Everything journaled so far, page by page; returns the last sequence. */
async function readPages(client: CliClient, sid: string, tid: string, after: number, sink: Sink): Promise<number> {
  let cursor = after
  for (;;) {
    const page: OutputPage = await client.output(sid, tid, cursor, PAGE_ITEMS)
    for (const item of page.items) if (item.kind === 'data') await sink.write(Buffer.from(item.data, 'base64'))
    if (page.items.length === 0 || page.end === 'closed') return page.next
    cursor = page.next
  }
}

/** Live, until the byte source closed; resumes after a network loss. Returns the last sequence. */
async function followOutput(client: CliClient, sid: string, tid: string, after: number, sink: Sink, giveUpMs: number): Promise<number> {
  let cursor = after
  let lostSince: number | undefined
  for (let attempt = 0; ; attempt++) {
    try {
      const events = await client.stream(`${terminalPath(sid, tid)}/output/watch?after=${cursor}`)
      lostSince = undefined
      attempt = 0
      for await (const event of events) {
        if (event.event === 'data') {
          const { sequence, data } = JSON.parse(event.data) as { sequence: number; data: string }
          await sink.write(Buffer.from(data, 'base64'))
          cursor = sequence
        } else if (event.event === 'resize') {
          cursor = (JSON.parse(event.data) as { sequence: number }).sequence
        } else if (event.event === 'closed') {
          return cursor
        } else if (event.event === 'unavailable') {
          throw new CommandError(`termkeep: terminal ${sid}/${tid} went away before its output ended (through sequence ${cursor})`)
        }
      }
    } catch (error) {
      // A refusal (410 retired, 404, 401) or a local failure ends it; a lost connection is retried.
      if (error instanceof ApiError || error instanceof CommandError || error instanceof UsageError) throw error
      if (!isNetworkLoss(error)) throw error
    }
    lostSince ??= Date.now()
    if (Date.now() - lostSince > giveUpMs)
      throw new CommandError(
        `termkeep: lost the connection to ${client.url}; gave up after ${giveUpMs / 1000} s (through sequence ${cursor})`,
      )
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]))
  }
}

/** Whether the stream broke on the way (a body cut off, a refused connection), not in this process. */
function isNetworkLoss(error: unknown): boolean {
  const name = (error as Error)?.name
  return (
    name === 'UnreachableError' || name === 'TypeError' || name === 'NoAnswerError' || (error as { code?: string })?.code === 'ECONNRESET'
  )
}
