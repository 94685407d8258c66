/**
 * Rebuilding a released screen from its newest revision, in the terminal of a fresh screen (the
 * worker's `Screen.restore` uses it; so does the test that proves the rebuilt screen equal to the
 * one it replaces): the display replayed into a history exactly as long as the revision's (so a
 * wrapped oldest row comes out exact), the allowance set again, then the state no display carries.
 */
import type { Terminal } from '@xterm/headless'
import { decodeDisplay, type DecodedDisplay } from '../../common/display/decode.ts'
import { replayAnsi } from '../../common/display/replay.ts'
import { HistoryStore } from './history-store.ts'
import { historyRows, type RestorePayload } from './protocol.ts'
import { applyState } from './restore.ts'

export async function replayRevision(terminal: Terminal, payload: RestorePayload): Promise<DecodedDisplay> {
  const decoded = decodeDisplay(payload.begin, payload.parts, { revision: payload.begin.revision, truncated: payload.begin.truncated })
  const write = () => new Promise<void>((resolve) => terminal.write(replayAnsi(decoded), resolve))
  const replay = async () => {
    terminal.options.scrollback = decoded.history.length
    await write()
    terminal.options.scrollback = historyRows(terminal.cols)
  }
  // A screen with a history store packs the history as it is written (its allowance, not the
  // ring's, equals the history's length), or, for a history within its hot rows, replays with the
  // whole history in xterm.js.
  const store = HistoryStore.of(terminal)
  if (!store) await replay()
  else if (!(await store.replaying(decoded.history.length, historyRows(terminal.cols), write))) {
    await store.wholeAsync(replay, historyRows(terminal.cols))
  }
  applyState(terminal, payload.state)
  return decoded
}
