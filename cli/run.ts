/**
 * `termkeep run <session> <script.js>`: starts a workflow run and streams its events as they
 * happen (agents starting and ending, log lines) on stderr, then prints the script's return value
 * as JSON on stdout. Ctrl-C cancels the run: its script stops at once and its agents' terminals are
 * closed; the command waits for that and exits 130. A dropped connection is resumed where it
 * stopped (Last-Event-ID), so no event is lost or shown twice; a start whose answer was lost is
 * retried under its Idempotency-Key, so it never starts the run twice.
 */
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { printable } from '../schema/wire/common.ts'
import type { AgentEndData, AgentStartData, LogData, RunEndData, StartWorkflow, WorkflowResult } from '../schema/wire/workflows.ts'
import { outcomeUnknown, UnreachableError } from '../web/client/api.ts'
import { UNKNOWN_OUTCOME_RETRY_MS } from '../schema/limits.ts'
import { CLI_RECONNECT_GIVE_UP_MS } from './tuning.ts'
import { retrying } from '../common/retry.ts'
import { type CliClient, NoAnswerError, REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, remoteErrorLine, seconds } from './remote.ts'
import { CommandError, exactArgs, HELP_OPTION, printedHelp, UsageError } from './usage.ts'
import { self } from './self.ts'

const EXIT = { completed: 0, error: 1, interrupted: 1, cancelled: 130 } as const

const USAGE = `usage: termkeep run <session> <script.js> [--input JSON] [--concurrency N] [--profile NAME] [--json]

  Runs a workflow script in the session: the body of an async function with agent(), parallel(),
  pipeline(), readText(), log() and \`input\` in scope. Each agent() runs in a new terminal of the
  session (\`termkeep attach <session> <terminal>\` follows one). Events are printed on stderr as
  they happen, the script's return value as JSON on stdout. Ctrl-C cancels the run.
  Exit code: 0 completed, 1 error or interrupted, 130 cancelled.

  --input JSON              the script's \`input\` (JSON text)
  --concurrency N           agents running at once (default 4)
  --profile NAME            the agent profile for agent() calls that name none
  --json                    print every event as one JSON line on stdout instead
  --reconnect-timeout SECS  give up after this long without the server (default ${CLI_RECONNECT_GIVE_UP_MS / 1000})
${REMOTE_USAGE}`

interface Output {
  out: NodeJS.WritableStream
  err: NodeJS.WritableStream
}

export async function runCommand(args: string[], io: Output = { out: process.stdout, err: process.stderr }): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...REMOTE_OPTIONS,
      ...HELP_OPTION,
      input: { type: 'string' },
      concurrency: { type: 'string' },
      profile: { type: 'string' },
      json: { type: 'boolean', default: false },
      'reconnect-timeout': { type: 'string' },
    },
  })
  if (printedHelp(values, USAGE, io.out)) return 0
  const [sessionId, file] = exactArgs(positionals, ['session', 'script.js'], 'run')
  const request: StartWorkflow = { script: readScript(file) }
  if (values.input !== undefined) request.input = parseInput(values.input)
  if (values.concurrency !== undefined) {
    if (!/^\d+$/.test(values.concurrency))
      throw new UsageError(`termkeep: --concurrency takes a whole number (got "${values.concurrency}")`)
    request.concurrency = Number(values.concurrency)
  }
  if (values.profile !== undefined) request.profile = values.profile
  const giveUpMs = seconds(values['reconnect-timeout'], '--reconnect-timeout', CLI_RECONNECT_GIVE_UP_MS)
  const client = remoteClient(values)
  const run = await startRun(client, sessionId, request)
  const print = values.json ? jsonPrinter(io) : humanPrinter(io, sessionId)
  if (!values.json) io.err.write(`termkeep: run ${run.id} started in session ${sessionId} (Ctrl-C cancels it)\n`)

  let cancelling: Promise<unknown> | undefined
  const cancel = () => {
    if (cancelling) {
      // A second Ctrl-C: stop waiting. The server finishes the cancel whether or not we watch.
      io.err.write('termkeep: not waiting for the cancel to finish\n')
      process.exit(EXIT.cancelled)
    }
    io.err.write('termkeep: cancelling the run; its agents are being closed… (Ctrl-C again: stop waiting)\n')
    cancelling = client.cancelWorkflow(sessionId, run.id, 'Ctrl-C in termkeep run').catch((error: unknown) => {
      io.err.write(`termkeep: could not cancel the run: ${(error as Error).message}\n`)
    })
  }
  process.on('SIGINT', cancel)
  try {
    const end = await follow(client, sessionId, run.id, print, giveUpMs)
    await cancelling
    return end === 'interrupted' ? EXIT.interrupted : EXIT[end.stopReason]
  } finally {
    process.off('SIGINT', cancel)
  }
}

/**
 * Starts the run under an Idempotency-Key of its own, retried while the outcome is unknown (a
 * network blip, a stalled server): a retry answers the run the first attempt started, never a
 * second one. If the outcome stays unknown, the error says so.
 */
async function startRun(client: CliClient, sessionId: string, request: StartWorkflow) {
  const key = `cli-run-${randomUUID()}`
  try {
    return await retrying(() => client.startWorkflow(sessionId, request, key), { retryable: outcomeUnknown })
  } catch (error) {
    if (!outcomeUnknown(error)) throw error
    const why = remoteErrorLine(error)
    throw new CommandError(
      `${why}\ntermkeep: the run may or may not have started: no answer for ${UNKNOWN_OUTCOME_RETRY_MS / 1000} s (its Idempotency-Key was ${key})`,
    )
  }
}

function readScript(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    throw new CommandError(
      `termkeep: cannot read the script ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    )
  }
}

function parseInput(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new UsageError(`termkeep: --input takes JSON (${(error as Error).message})`)
  }
}

type Printer = (event: string, id: string | undefined, data: unknown) => void

/** Reads the run's events to its end, resuming after a lost connection; returns how it ended. */
async function follow(
  client: CliClient,
  sid: string,
  rid: string,
  print: Printer,
  giveUpMs: number,
): Promise<WorkflowResult | 'interrupted'> {
  let lastEventId: string | undefined
  let lostSince: number | undefined
  for (;;) {
    try {
      const events = await client.workflowEvents(sid, rid, { lastEventId })
      lostSince = undefined
      for await (const event of events) {
        if (event.id !== undefined) lastEventId = event.id
        const data: unknown = JSON.parse(event.data)
        if (event.event === 'error') throw new CommandError(`termkeep: the event stream failed: ${JSON.stringify(data)}`)
        print(event.event, event.id, data)
        if (event.event === 'workflow/end') return (data as RunEndData).result
        if (event.event === 'interrupted') return 'interrupted'
      }
    } catch (error) {
      // A body cut off mid-stream is a TypeError from fetch ('terminated').
      const lost = error instanceof UnreachableError || error instanceof NoAnswerError || error instanceof TypeError
      if (!lost) throw error
    }
    // The stream ended early or the server went away: resume where it stopped.
    lostSince ??= Date.now()
    if (Date.now() - lostSince > giveUpMs)
      throw new CommandError(`termkeep: lost the server for ${giveUpMs / 1000} s; the run ${rid} goes on (termkeep run does not stop it)`)
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

function jsonPrinter({ out }: Output): Printer {
  return (event, id, data) => out.write(`${JSON.stringify({ event, ...(id !== undefined ? { id: Number(id) } : {}), data })}\n`)
}

function humanPrinter({ out, err }: Output, sid: string): Printer {
  const line = (text: string) => err.write(`${text}\n`)
  return (event, _id, data) => {
    switch (event) {
      case 'workflow/agent-start': {
        const d = data as AgentStartData
        return line(`[agent ${d.seq}] started: ${printable(d.label)}  (${self()} attach ${sid} ${d.terminal})`)
      }
      case 'workflow/agent-end': {
        const d = data as AgentEndData
        return line(`[agent ${d.seq}] ${d.outcome}${d.exitCode === null ? '' : ` (exit ${d.exitCode})`}`)
      }
      case 'workflow/log':
        for (const text of (data as LogData).message.split('\n')) line(`[log] ${printable(text)}`)
        return
      case 'workflow/end': {
        const { result } = data as RunEndData
        const agents = `${result.agentsStarted} agent${result.agentsStarted === 1 ? '' : 's'}`
        // A cancel's error repeats the stop reason ("cancelled: <reason>"): say it once.
        const why = result.stopReason === 'cancelled' ? result.error?.replace(/^cancelled:? ?/, '') : result.error
        line(`[run] ${result.stopReason}${why ? `: ${printable(why)}` : ''} (${agents})`)
        if (result.stopReason === 'completed') out.write(`${JSON.stringify(result.value ?? null, null, 2)}\n`)
        return
      }
      case 'interrupted':
        return line(`[run] interrupted: ${printable((data as { reason: string }).reason)}`)
    }
  }
}
