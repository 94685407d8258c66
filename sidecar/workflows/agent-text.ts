/**
 * The emulator-worker side of an agent's `text` when it wrote no result file: its output as the
 * screen shows it, history included, as plain text. Rows the terminal wrapped are joined back into
 * their logical line; trailing blank lines are dropped. Bounded: beyond `maxBytes` the newest text
 * is kept (an agent's answer comes last) and the result says `truncated`.
 * Registered in sidecar/emulator/worker.ts; the main thread asks with `emulator.request(AGENT_TEXT)`.
 */
import type { Terminal } from '@xterm/headless'
import { registerRequestHandler } from '../emulator/handlers.ts'
import { activeBuffer } from '../emulator/history-store.ts'

export const AGENT_TEXT = 'agent-text'

export interface AgentTextRequest {
  maxBytes: number
}

export interface RenderedText {
  text: string
  truncated: boolean
}

/** Pure over a terminal: its active buffer (history and viewport) as plain text. */
export function renderText(terminal: Terminal, maxBytes: number): RenderedText {
  const buffer = activeBuffer(terminal)
  const lines: string[] = []
  for (let y = 0; y < buffer.length; y++) {
    const line = buffer.getLine(y)
    if (!line) continue
    // A row that continues on the next one keeps its trailing spaces: they are text, not padding.
    const continues = buffer.getLine(y + 1)?.isWrapped ?? false
    const text = line.translateToString(!continues)
    if (line.isWrapped && lines.length > 0) lines[lines.length - 1] += text
    else lines.push(text)
  }
  while (lines.length > 0 && lines[lines.length - 1].trim() === '') lines.pop()
  return tail(lines.join('\n'), maxBytes)
}

/** Pure: the last at most `maxBytes` UTF-8 bytes of `text`, never half a character. */
export function tail(text: string, maxBytes: number): RenderedText {
  const bytes = new TextEncoder().encode(text)
  if (bytes.length <= maxBytes) return { text, truncated: false }
  let start = bytes.length - maxBytes
  while (start < bytes.length && (bytes[start] & 0xc0) === 0x80) start++ // a continuation byte
  return { text: new TextDecoder().decode(bytes.subarray(start)), truncated: true }
}

registerRequestHandler(AGENT_TEXT, (context, payload) => renderText(context.terminal, (payload as AgentTextRequest).maxBytes))
