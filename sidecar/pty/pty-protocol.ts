/**
 * Messages between the main thread (`PtyThread`, pty-thread.ts) and the PTY thread
 * (pty-worker.ts). Every message names its terminal by `id`; per terminal, messages arrive in the
 * order they were sent, so a `resized` follows every `data` flushed before the resize and `end`
 * follows the last `data`.
 */
import type { PtyExit, PtySpawnOptions } from './pty-process.ts'

export type ToPtyThread =
  /** Spawn the process and append its output to the spool file at `spoolPath` (already created,
   * empty, by the main thread's journal). */
  | { type: 'spawn'; id: number; options: PtySpawnOptions; spoolPath: string }
  | { type: 'write'; id: number; bytes: Uint8Array }
  /** Flush what was read so far, resize, then answer `resized`. */
  | { type: 'resize'; id: number; cols: number; rows: number }
  | { type: 'force-close'; id: number }

export type FromPtyThread =
  | { type: 'spawned'; id: number; pid: number }
  | { type: 'spawn-failed'; id: number; message: string }
  /** `bytes` were appended to the spool at `offset` (a flush of gathered reads). */
  | { type: 'data'; id: number; offset: number; bytes: Uint8Array }
  /** `applied`: false when the process had already exited (nothing was resized). */
  | { type: 'resized'; id: number; cols: number; rows: number; applied: boolean }
  /** The byte source closed; no `data` follows. */
  | { type: 'end'; id: number }
  | { type: 'exit'; id: number; exit: PtyExit }
  /** Appending to the spool failed: the terminal's output can no longer be journaled. */
  | { type: 'failed'; id: number; message: string }
