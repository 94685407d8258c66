/**
 * `send_keys`: type text and tmux-named keys into a terminal.
 *
 * Input is accepted only from the attachment that controls the terminal (a follow stream), so the
 * tool follows for the duration of the call with the attachment `mcp` (MCP_ATTACHMENT_ID) under
 * the caller's token, sends one input write, and ends the follow, which frees control again.
 * It asks for control with `control=if-free`: when another client controls the terminal (a person
 * in `termkeep attach` or the web page) the call is refused with `terminal/control-unavailable`
 * {reason: 'controlled'} and nothing is typed. With `takeControl: true` it takes control for the
 * call; the person's client shows it lost control, and takes it back once the call is over (the
 * CLI does so by itself). The result says whose control was taken.
 *
 * Named keys become bytes with schema/keys.ts; arrows and Home/End follow the terminal's
 * application cursor mode (DECCKM) as the follow's snapshot reports it.
 *
 * The write carries an Idempotency-Key of its own (keyed.ts), so it is retried within the call
 * while its outcome is unknown (a 503 from a stalled sidecar; also a 503 from the database, or a
 * full input backlog, where nothing was done yet) for at most MCP_RETRY_MS, and typed once however
 * often it is sent. If it never lands, the call is an error saying the outcome is unknown.
 */
import { keyBytes } from '../../schema/keys.ts'
import { IDEMPOTENCY_KEY_HEADER } from '../../schema/wire/common.ts'
import { ATTACHMENT_HEADER, TerminalParams, type FollowSnapshot } from '../../schema/wire/terminals.ts'
import { MCP_ATTACHMENT_ID, SendArgs } from '../../schema/wire/mcp.ts'
import { TermkeepError } from '../../schema/errors.ts'
import type { Dispatcher } from './dispatch.ts'
import { EventStream } from './events.ts'
import { keyedRequest } from './keyed.ts'
import { toolInput } from './input.ts'
import { jsonResult, T, type Tool } from './tool.ts'

const FOLLOW = `${T}/follow`
const INPUT = `${T}/input`

/** The snapshot's serialized modes (addon-serialize appends `ESC [?1h` while DECCKM is set; cell
 * contents never hold an ESC). */
export function applicationCursorKeys(snapshot: FollowSnapshot): boolean {
  return snapshot.screen.includes('\x1b[?1h')
}

/** Follows as `mcp` and returns the stream with its snapshot; the stream holds control until closed. */
export async function followForInput(
  call: Dispatcher,
  params: Record<string, string>,
  control: 'take' | 'if-free',
): Promise<{ stream: EventStream; snapshot: FollowSnapshot }> {
  const stream = await EventStream.open(call, FOLLOW, { params, query: { attachment: MCP_ATTACHMENT_ID, control } })
  const first = await stream.next()
  if (typeof first === 'string' || first.event !== 'snapshot') {
    stream.close()
    throw new TermkeepError('terminal/unavailable', 'the terminal ended before it could take input')
  }
  return { stream, snapshot: JSON.parse(first.data) as FollowSnapshot }
}

export function inputBytes(args: SendArgs, modes: { applicationCursorKeys: boolean }): Uint8Array {
  const keys = (args.keys ?? []).map((name) => keyBytes(name, modes)!).join('')
  return new TextEncoder().encode((args.text ?? '') + keys)
}

export const sendKeys: Tool = {
  name: 'send_keys',
  title: 'Type into a terminal',
  description:
    'Type `text` as is, then `keys` by tmux send-keys name (Enter, Tab, C-c, C-d, M-x, Up, Down, PageUp, F1–F12, S-Tab, Escape, BSpace). ' +
    'Refused when another client (a person) controls the terminal, unless takeControl is true. Returns at once; use wait_for to see the effect.',
  annotations: { destructiveHint: true, openWorldHint: false },
  uses: [
    { method: 'GET', path: FOLLOW },
    { method: 'POST', path: INPUT },
  ],
  input: toolInput({ params: TerminalParams, own: SendArgs }),
  async run({ params, own }, { call, tuning }) {
    const args = own as SendArgs
    let tookControlFrom: string | null = null
    let followed: Awaited<ReturnType<typeof followForInput>>
    try {
      followed = await followForInput(call, params, 'if-free')
    } catch (error) {
      const controlled = error instanceof TermkeepError && error.details.reason === 'controlled'
      if (!controlled || !args.takeControl) throw error
      tookControlFrom = String(error.details.controllerId ?? '')
      followed = await followForInput(call, params, 'take')
    }
    try {
      const bytes = inputBytes(args, { applicationCursorKeys: applicationCursorKeys(followed.snapshot) })
      await keyedRequest(
        call,
        (key) =>
          call.open('POST', INPUT, {
            params,
            body: bytes,
            headers: { [ATTACHMENT_HEADER]: MCP_ATTACHMENT_ID, [IDEMPOTENCY_KEY_HEADER]: key },
          }),
        {
          retryable: (error) => error.code === 'terminal/input-backlog-full',
          retryMs: tuning?.retryMs,
          unknown: 'it may still type the keys (once) when it resumes; read_screen shows whether they arrived',
        },
      )
      return jsonResult({ sent: bytes.length, sequence: followed.snapshot.sequence, tookControlFrom })
    } finally {
      followed.stream.close()
    }
  },
}
