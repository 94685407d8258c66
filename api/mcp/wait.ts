/**
 * `wait_for`: until the screen matches a pattern, the program printed nothing for `quietMs`, or
 * its output ended (it exited), at most `timeoutMs`. Event-driven: the screen comes from
 * `screen/watch` (a projection at each change), quiet from `output/watch` (every byte, from the
 * screen's sequence on); no request is repeated while waiting. A timeout is an answer
 * (`reason: 'timeout'`), not an error.
 */
import { MCP_PATTERN_TEXT_MAX_CHARS } from '../../schema/limits.ts'
import { MCP_EXIT_RECORD_WAIT_MS } from '../tuning.ts'
import type { ScreenProjection } from '../../schema/wire/display.ts'
import { WaitArgs } from '../../schema/wire/mcp.ts'
import { TerminalParams, type TerminalInfo } from '../../schema/wire/terminals.ts'
import { TermkeepError } from '../../schema/errors.ts'
import type { Dispatcher } from './dispatch.ts'
import { EventStream, type StreamEvent } from './events.ts'
import { toolInput } from './input.ts'
import { compilePattern, firstMatch, type Pattern } from './pattern.ts'
import { matchText } from './text.ts'
import { jsonResult, T, type Tool } from './tool.ts'

const SCREEN_WATCH = `${T}/screen/watch`
const OUTPUT_WATCH = `${T}/output/watch`

export type WaitReason = 'matched' | 'quiet' | 'exited' | 'timeout'

interface Outcome {
  reason: WaitReason
  match?: { match: string; line: string }
}

/** Feeds every event of a stream to `onEvent` until it ends (then `onEnd`) or fails. */
async function pump(stream: EventStream, onEvent: (event: StreamEvent) => void, onEnd: () => void): Promise<void> {
  for (;;) {
    const event = await stream.next()
    if (event === 'ended') return onEnd()
    if (event !== 'timeout') onEvent(event)
  }
}

/**
 * The terminal's recorded info once its exit is in the database: the sidecar reports the exit
 * right after the end of output and writes it at once, so a read that comes first is repeated a
 * few times within MCP_EXIT_RECORD_WAIT_MS. Undefined when the token may not read terminal info.
 */
export async function exitInfo(call: Dispatcher, params: Record<string, string>): Promise<TerminalInfo | undefined> {
  const deadline = Date.now() + MCP_EXIT_RECORD_WAIT_MS
  for (let pause = 25; ; pause *= 2) {
    let info: TerminalInfo
    try {
      info = await call.json<TerminalInfo>('GET', T, { params })
    } catch (error) {
      if (error instanceof TermkeepError && error.code === 'auth/forbidden') return undefined
      throw error
    }
    if ((info.state !== 'running' && info.state !== 'starting') || Date.now() + pause > deadline) return info
    await new Promise((resolve) => setTimeout(resolve, pause))
  }
}

export const waitFor: Tool = {
  name: 'wait_for',
  title: 'Wait for a terminal',
  description:
    'Wait until the screen matches `pattern` (RE2 regex over the screen text, history tail included), the program printed nothing for `quietMs`, ' +
    'or its output ended (it exited), at most `timeoutMs`. With neither pattern nor quietMs it waits for the exit. ' +
    'Answers reason matched | quiet | exited | timeout, the matching line, and the exit code once exited.',
  annotations: { readOnlyHint: true, openWorldHint: false },
  uses: [{ method: 'GET', path: SCREEN_WATCH }],
  input: toolInput({ params: TerminalParams, own: WaitArgs }),
  async run({ params, own }, { call }) {
    const args = own as WaitArgs
    const pattern: Pattern | undefined = args.pattern === undefined ? undefined : compilePattern(args.pattern)
    const started = Date.now()
    const screens = await EventStream.open(call, SCREEN_WATCH, { params })
    let output: EventStream | undefined
    let timeout: ReturnType<typeof setTimeout> | undefined
    // One quiet timer, restarted at each output event (not one kept per event).
    let quiet: ReturnType<typeof setTimeout> | undefined
    let sequence = 0
    try {
      const outcome = await new Promise<Outcome>((resolve, reject) => {
        timeout = setTimeout(() => resolve({ reason: 'timeout' }), args.timeoutMs)
        const exited = () => resolve({ reason: 'exited' })
        const restartQuiet = () => {
          clearTimeout(quiet)
          quiet = setTimeout(() => resolve({ reason: 'quiet' }), args.quietMs)
        }
        let first = true
        const onScreen = (event: StreamEvent) => {
          if (event.event === 'closed') return exited()
          if (event.event !== 'screen') return
          const screen = JSON.parse(event.data) as ScreenProjection
          sequence = screen.sequence
          const found = pattern && firstMatch(pattern, matchText(screen, MCP_PATTERN_TEXT_MAX_CHARS))
          if (found) return resolve({ reason: 'matched', match: found })
          if (first && args.quietMs !== undefined) {
            // Quiet is measured on every byte after what this first screen shows.
            EventStream.open(call, OUTPUT_WATCH, { params, query: { after: String(screen.sequence) } })
              .then((stream) => {
                output = stream
                restartQuiet()
                const onOutput = (e: StreamEvent) =>
                  e.event === 'data' || e.event === 'resize' ? restartQuiet() : e.event === 'begin' ? undefined : exited()
                return pump(stream, onOutput, () => {})
              })
              .catch(reject)
          }
          first = false
        }
        pump(screens, onScreen, exited).catch(reject)
      })
      const exit = outcome.reason === 'exited' ? await exitInfo(call, params) : undefined
      return jsonResult({
        reason: outcome.reason,
        elapsedMs: Date.now() - started,
        ...(outcome.match ? { match: outcome.match.match, line: outcome.match.line } : {}),
        sequence,
        ...(exit ? { state: exit.state, exitCode: exit.exitCode, exitSignal: exit.exitSignal } : {}),
      })
    } finally {
      clearTimeout(timeout)
      clearTimeout(quiet)
      screens.close()
      output?.close()
    }
  },
}
