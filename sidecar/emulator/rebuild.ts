/**
 * Rebuilding a released screen from its newest revision, in the terminal of a fresh screen (the
 * worker's `Screen.restore` uses it; so does the test that proves the rebuilt screen equal to the
 * one it replaces): the display replayed into a history exactly as long as the revision's (so a
 * wrapped oldest row comes out exact), the allowance set again, then the state no display carries.
 */
import type { Terminal } from '@xterm/headless'
import { decodeDisplay, type DecodedDisplay } from '../../common/display/decode.ts'
import { replayAnsi } from '../../common/display/replay.ts'
import { historyRows, type RestorePayload } from './protocol.ts'
import { applyState } from './restore.ts'

export async function replayRevision(terminal: Terminal, payload: RestorePayload): Promise<DecodedDisplay> {
  const decoded = decodeDisplay(payload.begin, payload.parts, { revision: payload.begin.revision, truncated: payload.begin.truncated })
  terminal.options.scrollback = decoded.history.length
  await new Promise<void>((resolve) => terminal.write(replayAnsi(decoded), resolve))
  terminal.options.scrollback = historyRows(terminal.cols)
  applyState(terminal, payload.state)
  return decoded
}
