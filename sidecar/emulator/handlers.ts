/**
 * The worker-side request registry. A handler runs inside the emulator worker with the screen of
 * one terminal, after every record sent before the request has been applied. It may be async;
 * the screen receives no new records until it settles, so what it reads is consistent with
 * `context.sequence`.
 *
 * To add a kind (display issue): create a module that calls `registerRequestHandler('kind', fn)`
 * and import it from `worker.ts` (see the marked line there). Then, on the main thread,
 * `emulator.request<Result>('kind', payload)`.
 */
import type { SerializeAddon } from '@xterm/addon-serialize'
import type { Terminal } from '@xterm/headless'
import type { DecodedDisplay } from '../../common/display/decode.ts'
import type { RestorePayload } from './protocol.ts'

export interface EmulatorContext {
  /** The headless terminal (xterm.js API; buffer.active/normal/alternate, modes, options). */
  terminal: Terminal
  serializer: SerializeAddon
  /** The last journal sequence applied to `terminal`. */
  sequence: number
  /** The screen's key (sessionId/terminalId), for logs or persistence. */
  key: string
}

export type RequestHandler = (context: EmulatorContext, payload: unknown) => unknown | Promise<unknown>

const handlers = new Map<string, RequestHandler>()

export function registerRequestHandler(kind: string, handler: RequestHandler): void {
  if (handlers.has(kind)) throw new Error(`emulator request kind "${kind}" is already registered`)
  handlers.set(kind, handler)
}

export function requestHandler(kind: string): RequestHandler | undefined {
  return handlers.get(kind)
}

/**
 * Screen setups run once when a screen opens, before it sees any byte (display issue: the display
 * tracker registers its parser hooks here, so title, palette and the alternate screen are tracked
 * from the first byte).
 */
export type ScreenSetup = (context: EmulatorContext) => void

const setups: ScreenSetup[] = []

export function registerScreenSetup(setup: ScreenSetup): void {
  setups.push(setup)
}

export function runScreenSetups(context: EmulatorContext): void {
  for (const setup of setups) setup(context)
}

/**
 * Restore hooks run when a released screen was rebuilt from a revision, after its display and
 * state were replayed (display issue: the tracker takes back the last alternate screen, the history
 * position its epoch).
 */
export type ScreenRestore = (context: EmulatorContext, payload: RestorePayload, decoded: DecodedDisplay) => void

const restores: ScreenRestore[] = []

export function registerScreenRestore(restore: ScreenRestore): void {
  restores.push(restore)
}

export function runScreenRestores(context: EmulatorContext, payload: RestorePayload, decoded: DecodedDisplay): void {
  for (const restore of restores) restore(context, payload, decoded)
}

/**
 * Idle hooks run on a screen that has had no records and no requests for SCREEN_IDLE_MS, in order
 * with its work (display issue: precomputing what the next revision needs, so that a keystroke's
 * revision is fast).
 */
export type ScreenIdle = (context: EmulatorContext) => void

const idles: ScreenIdle[] = []

export function registerScreenIdle(idle: ScreenIdle): void {
  idles.push(idle)
}

export function runScreenIdles(context: EmulatorContext): void {
  for (const idle of idles) idle(context)
}
