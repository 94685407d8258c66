/**
 * `run_command`: one command in a new terminal of the session (`PUT …/terminals/:tid` with
 * `command`: the shell runs `-c command`), its output as plain text and its exit code. No markers
 * and no polling: the tool follows the new terminal from its first byte (Last-Event-ID 0), and
 * the follow sends the exit only after the output that preceded it. The terminal is kept, exited,
 * for inspection (read_screen, read_output) until close_terminal (an exited terminal does not
 * count toward the session's running ones); on a timeout it keeps running
 * (wait_for, send_keys). Output beyond MCP_TEXT_MAX_BYTES is cut from the front and counted.
 */
import { DEFAULT_COLS, DEFAULT_ROWS, MAX_TITLE_CHARS, MCP_TEXT_MAX_BYTES } from '../../schema/limits.ts'
import { titleFrom } from '../../schema/wire/common.ts'
import { MCP_ATTACHMENT_ID, RunArgs } from '../../schema/wire/mcp.ts'
import { CreateTerminalFields, type FollowOutput, type FollowState, type TerminalInfo } from '../../schema/wire/terminals.ts'
import * as v from 'valibot'
import { SessionId } from '../../schema/wire/common.ts'
import { randomId } from '../../common/crypto.ts'
import { EventStream } from './events.ts'
import { toolInput } from './input.ts'
import { fromBase64 } from '../../common/bytes.ts'
import { OutputTail } from './text.ts'
import { T, textResult, type Tool } from './tool.ts'

const FOLLOW = `${T}/follow`
const ENDED = new Set(['exited', 'closed', 'retired'])

export const runCommand: Tool = {
  name: 'run_command',
  title: 'Run a command',
  description:
    'Run one command in a new terminal of the session (`shell -c command`, the session directory as cwd) and answer its exit code and output as plain text. ' +
    "The terminal is kept for inspection (read_screen, read_output) until close_terminal; once exited it does not count toward the session's running terminals. " +
    'After `timeoutMs` the answer says it is still running.',
  annotations: { destructiveHint: true, openWorldHint: true },
  uses: [
    { method: 'PUT', path: T },
    { method: 'GET', path: FOLLOW },
  ],
  input: toolInput({
    params: v.object({ sid: SessionId }),
    body: v.omit(CreateTerminalFields, ['command', 'title']),
    own: RunArgs,
    defaults: { cols: () => DEFAULT_COLS, rows: () => DEFAULT_ROWS },
  }),
  async run({ params, body, own }, { call }) {
    const args = own as RunArgs
    const terminal: Record<string, string> = { sid: params.sid!, tid: args.tid ?? randomId('run') }
    const started = Date.now()
    const create = { ...body, command: args.command, title: titleFrom(args.command, MAX_TITLE_CHARS, 'run') }
    await call.json<TerminalInfo>('PUT', T, { params: terminal, body: create })
    // From the first byte: Last-Event-ID 0 replays everything, then goes on live.
    const stream = await EventStream.open(call, FOLLOW, {
      params: terminal,
      query: { attachment: MCP_ATTACHMENT_ID },
      headers: { 'last-event-id': '0' },
    })
    const tail = new OutputTail(MCP_TEXT_MAX_BYTES)
    let info: TerminalInfo | undefined
    let next = 0
    // The first frame is the terminal as it is now, and the end of the backlog replayed after it:
    // a command that already exited is done only once that backlog was read.
    let replayThrough = 0
    const done = () => info !== undefined && ENDED.has(info.state) && next >= replayThrough
    try {
      const deadline = started + args.timeoutMs
      while (!done()) {
        const event = await stream.next(deadline - Date.now())
        if (event === 'timeout' || event === 'ended') break
        if (event.id !== undefined) next = Number(event.id)
        if (event.event === 'output') tail.add(fromBase64((JSON.parse(event.data) as FollowOutput).data))
        else if (event.event === 'state') {
          const state = JSON.parse(event.data) as v.InferOutput<typeof FollowState>
          info = state.info
          replayThrough = state.replayThrough ?? replayThrough
        }
      }
    } finally {
      stream.close()
    }
    const { text, omittedBytes } = tail.text()
    const finished = done()
    return textResult(text, {
      sid: terminal.sid,
      tid: terminal.tid,
      state: info?.state ?? 'running',
      exitCode: finished ? info!.exitCode : null,
      exitSignal: finished ? info!.exitSignal : null,
      timedOut: !finished,
      elapsedMs: Date.now() - started,
      outputBytes: tail.seenBytes,
      omittedBytes,
      next,
    })
  },
}
