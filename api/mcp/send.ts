/**
 * `send_keys`: type text and tmux-named keys into a terminal, in one request (POST …/keys).
 *
 * A terminal takes input only from the attachment that controls it. The keys route takes control
 * for its one write as attachment `mcp` (MCP_ATTACHMENT_ID) of the caller's token and frees it
 * again, with `control=if-free`: when another client controls the terminal (a person in
 * `termkeep attach` or the web page) the call is refused with `terminal/control-unavailable`
 * {reason: 'controlled'} and nothing is typed. With `takeControl: true` it takes control for the
 * write; the person's client sees it lost control, and takes it back (the CLI does so by itself).
 * The result says whose control was taken.
 *
 * The sidecar turns the key names into bytes (schema/keys.ts) with the terminal's own application
 * cursor mode, so arrows and Home/End arrive as the program expects them.
 *
 * The write carries an Idempotency-Key of its own (keyed.ts), so it is retried within the call
 * while its outcome is unknown (a 503 from a stalled sidecar; also a 503 from the database, or a
 * full input backlog, where nothing was done yet) for at most MCP_RETRY_MS, and typed once however
 * often it is sent. If it never lands, the call is an error saying the outcome is unknown.
 */
import { IDEMPOTENCY_KEY_HEADER } from '../../schema/wire/common.ts'
import { MCP_ATTACHMENT_ID, SendArgs } from '../../schema/wire/mcp.ts'
import { ATTACHMENT_HEADER, type SentKeys, TerminalParams } from '../../schema/wire/terminals.ts'
import { toolInput } from './input.ts'
import { keyedRequest } from './keyed.ts'
import { jsonResult, T, type Tool } from './tool.ts'

const KEYS = `${T}/keys`

export const sendKeys: Tool = {
  name: 'send_keys',
  title: 'Type into a terminal',
  description:
    'Type `text` as is, then `keys` by tmux send-keys name (Enter, Tab, C-c, C-d, M-x, Up, Down, PageUp, F1–F12, S-Tab, Escape, BSpace). ' +
    'Refused when another client (a person) controls the terminal, unless takeControl is true. Returns at once; use wait_for to see the effect.',
  annotations: { destructiveHint: true, openWorldHint: false },
  uses: [{ method: 'POST', path: KEYS }],
  input: toolInput({ params: TerminalParams, own: SendArgs }),
  async run({ params, own }, { call, tuning }) {
    const args = own as SendArgs
    const body = { text: args.text, keys: args.keys, control: args.takeControl ? 'take' : 'if-free' }
    const sent = await keyedRequest(
      call,
      (key) =>
        call.json<SentKeys>('POST', KEYS, {
          params,
          body,
          headers: { [ATTACHMENT_HEADER]: MCP_ATTACHMENT_ID, [IDEMPOTENCY_KEY_HEADER]: key },
        }),
      {
        retryable: (error) => error.code === 'terminal/input-backlog-full',
        retryMs: tuning?.retryMs,
        unknown: 'it may still type the keys (once) when it resumes; read_screen shows whether they arrived',
      },
    )
    return jsonResult(sent)
  },
}
