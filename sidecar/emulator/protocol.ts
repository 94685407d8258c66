/**
 * Messages between the main thread (`Emulator`, `EmulatorPool`) and an emulator worker
 * (`worker.ts`). One worker hosts the screens of several terminals; every message names its
 * screen by `key`. Within a screen, messages are handled strictly in order: a `request` sent after
 * some `records` sees the screen with exactly those records applied.
 *
 * Extension point (display issue): a `request` carries a `kind`; the worker looks the kind up in
 * the handler registry (`handlers.ts`). Built in: `snapshot`. Display encoding and the plain-text
 * projection add their own kinds (e.g. `display-encode`, `screen-text`) by registering handlers
 * in a module that `worker.ts` imports, and call them from the main thread with
 * `emulator.request(kind, payload)`.
 */
import { HISTORY_CELLS } from '../../schema/limits.ts'
import type { DisplayBegin, RowsEvent } from '../../schema/wire/display.ts'
import type { EmulatorState } from './restore.ts'

/** History allowance: HISTORY_CELLS cells, i.e. floor(HISTORY_CELLS / cols) rows. */
export const historyRows = (cols: number): number => Math.floor(HISTORY_CELLS / cols)

/** Data bytes travel in one transferred buffer per batch; records point into it. */
export type WireRecord =
  | { kind: 'data'; sequence: number; start: number; end: number }
  | { kind: 'resize'; sequence: number; cols: number; rows: number }

/**
 * A released screen rebuilt from its newest revision: the revision as readDisplay streams it, the
 * state it cannot show, and (when the database's history is of this terminal's current epoch) the
 * epoch to continue, so the next revision writes no history twice. Records after `sequence`
 * follow as usual.
 */
export interface RestorePayload {
  sequence: number
  begin: DisplayBegin
  /** The revision's parts (storage/displays/revisions.ts `revisionParts`): what readDisplay streams, decoded
   * the same, without its event packing. */
  parts: RowsEvent[]
  state: EmulatorState
  history?: { token: string; first: number }
}

export type ToWorker =
  | { type: 'open'; key: string; cols: number; rows: number; restore?: RestorePayload }
  /** `edge`: the batch ends the journal (EOF), so everything is written out; otherwise the
   * worker's fast-forward may hold an unfinished plain-text stretch over to the next batch (a
   * request writes it out first, so nobody sees the screen without it). */
  | { type: 'records'; key: string; bytes: Uint8Array; records: WireRecord[]; edge: boolean }
  | { type: 'request'; key: string; id: number; kind: string; payload?: unknown }
  | { type: 'close'; key: string }

export type FromWorker =
  /** Every record up to `sequence` is parsed into the screen; `bytes` data bytes were in the batch;
   * `skipped`: journal bytes this screen fast-forwarded so far (sidecar/display/fast-forward.ts). */
  | { type: 'applied'; key: string; sequence: number; bytes: number; skipped: number }
  | { type: 'response'; key: string; id: number; ok: true; value: unknown }
  | { type: 'response'; key: string; id: number; ok: false; error: string }

/** The built-in `snapshot` request's answer. */
export interface EmulatorSnapshot {
  /** The journal sequence the screen reflects: every record up to it, nothing after. */
  sequence: number
  cols: number
  rows: number
  /** ANSI that recreates the screen (with history) in a fresh terminal of cols × rows, ending with
   * explicit cursor position and visibility. */
  screen: string
}
