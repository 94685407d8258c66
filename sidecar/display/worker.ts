/**
 * The display layer's part of the emulator worker (imported by sidecar/emulator/worker.ts). Every
 * screen gets a DisplayTracker when it opens, so parser hooks see its output from the first byte.
 * Request kinds, answered in order with the screen's records:
 *   `display-encode` {force?, budget?, stored?} → DisplayEncodeResult: the revision when the display
 *                    changed since the last one this screen returned (or `force`), else
 *                    {changed:false}; it carries the history rows after `stored` (what the database
 *                    holds of the current epoch), or all of them in a new epoch.
 *   `screen-text`    {} → ScreenProjection (the plain projection).
 */
import type { Terminal } from '@xterm/headless'
import type { EncodedRow, RowsEvent } from '../../schema/wire/display.ts'
import {
  registerRequestHandler,
  registerScreenIdle,
  registerScreenRestore,
  registerScreenSetup,
  type EmulatorContext,
} from '../emulator/handlers.ts'
import { normalBuffer } from '../emulator/history-store.ts'
import { captureState } from '../emulator/restore.ts'
import { plainProjection } from './plain.ts'
import { HistoryPosition } from './history.ts'
import { encodeRevision, type HistoryPacking, sameDisplay, type EncodedRevision } from './revision.ts'
import { RowFacts } from './row-facts.ts'
import { DisplayTracker } from './tracker.ts'

export const DISPLAY_ENCODE = 'display-encode'
export const SCREEN_TEXT = 'screen-text'

export interface DisplayEncodeRequest {
  force?: boolean
  budget?: number
  stored?: { token: string; from: number }
}

export type DisplayEncodeResult = { changed: false; sequence: number } | { changed: true; revision: EncodedRevision }

interface ScreenDisplay {
  tracker: DisplayTracker
  history: HistoryPosition
  /** The last history packing, reused while the history and the head's styles stay the same. */
  packing: { last?: HistoryPacking }
  /** What each history row adds to a packing, so an encode need not encode the history again. */
  facts: RowFacts
  last?: EncodedRevision
  /** Sequence and tracker generation when `last` was encoded: unchanged means nothing to encode. */
  lastSequence: number
  lastGeneration: number
  lastGeometry: string
}

const displays = new WeakMap<Terminal, ScreenDisplay>()

function displayOf(context: EmulatorContext): ScreenDisplay {
  let display = displays.get(context.terminal)
  if (!display) {
    display = {
      tracker: new DisplayTracker(context.terminal),
      history: new HistoryPosition(context.terminal),
      packing: {},
      facts: new RowFacts(),
      lastSequence: -1,
      lastGeneration: -1,
      lastGeometry: '',
    }
    displays.set(context.terminal, display)
  }
  return display
}

registerScreenSetup((context) => {
  displayOf(context)
})

/** The display tracker of a screen (tests compare a rebuilt screen's with the original's). */
export function trackerOf(terminal: Terminal): DisplayTracker | undefined {
  return displays.get(terminal)?.tracker
}

registerRequestHandler(DISPLAY_ENCODE, (context, payload): DisplayEncodeResult => {
  const request = (payload ?? {}) as DisplayEncodeRequest
  const display = displayOf(context)
  const { terminal, sequence } = context
  const geometry = `${terminal.cols}x${terminal.rows}`
  const untouched =
    sequence === display.lastSequence && display.tracker.generation === display.lastGeneration && geometry === display.lastGeometry
  if (untouched && !request.force) return { changed: false, sequence }
  const revision = encodeRevision(display.tracker, display.history, {
    sequence,
    budget: request.budget,
    stored: request.stored,
    reuse: display.packing,
    facts: display.facts,
  })
  // What a rebuild from this revision needs besides it; none when its history is incomplete.
  revision.restore = revision.truncated ? null : (captureState(terminal) ?? null)
  display.lastSequence = sequence
  display.lastGeneration = display.tracker.generation
  display.lastGeometry = geometry
  if (!request.force && display.last && sameDisplay(display.last, revision)) return { changed: false, sequence }
  // Kept only to compare with the next one: without the rows and styles it carried.
  display.last = { ...revision, styles: [], history: { ...revision.history, rows: [] } }
  return { changed: true, revision }
})

/** A screen rebuilt from a revision: the last alternate screen and the history epoch come back. */
registerScreenRestore((context, payload, decoded) => {
  const display = displayOf(context)
  if (!decoded.begin.alternateScreen && decoded.alternate.length > 0) {
    display.tracker.lastAlternate = { rows: alternateRows(payload.parts), styles: decoded.styles }
  }
  if (payload.history) display.history.adopt(payload.history.token, payload.history.first)
  // The screen is that revision: an encode before any later record has nothing new to write.
  display.lastSequence = context.sequence
  display.lastGeneration = display.tracker.generation
  display.lastGeometry = `${context.terminal.cols}x${context.terminal.rows}`
})

/** The alternate region's rows as the revision encoded them (a row split over events rejoined). */
function alternateRows(parts: RowsEvent[]): EncodedRow[] {
  const rows: EncodedRow[] = []
  let continues = false
  for (const event of parts) {
    if (event.region !== 'alternate') continue
    event.rows.forEach((row, i) => {
      if (i === 0 && continues) rows[rows.length - 1].push(...row.slice(1))
      else rows.push(row)
    })
    if (event.rows.length > 0) continues = event.partial === true
  }
  return rows
}

/** A quiet screen computes the facts of its history rows now (row-facts.ts), so that the revision
 * of the next keystroke counts the history instead of encoding it: after a flood or a new epoch the
 * revision encodes every row and leaves the facts to this. */
registerScreenIdle((context) => {
  const display = displayOf(context)
  display.facts.sync(display.history.locate(), normalBuffer(context.terminal), context.terminal.cols)
})

registerRequestHandler(SCREEN_TEXT, (context) => plainProjection(context.terminal, displayOf(context).tracker, context.sequence))
