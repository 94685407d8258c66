/**
 * Messages between the main thread (`PtyThread`, pty-thread.ts) and the PTY thread
 * (pty-worker.ts). Every message names its terminal by `id`; per terminal, messages arrive in the
 * order they were sent, so a `resized` follows every `data` flushed before the resize and `end`
 * follows the last `data`.
 */
import type { PtyExit, PtySpawnOptions } from './pty-process.ts'

export type ToPtyThread =
  | { type: 'spawn'; id: number; options: PtySpawnOptions }
  | { type: 'write'; id: number; bytes: Uint8Array }
  /** Flush what was read so far, resize, then answer `resized`. */
  | { type: 'resize'; id: number; cols: number; rows: number }
  | { type: 'force-close'; id: number }
  /** The main thread journaled `bytes` of this terminal's flushes (flow control). */
  | { type: 'journaled'; id: number; bytes: number }
  /** End the thread (sent once every process it hosts has exited). */
  | { type: 'close' }

export type FromPtyThread =
  | { type: 'spawned'; id: number; pid: number; ttyIndex?: number }
  | { type: 'spawn-failed'; id: number; message: string }
  /** A flush of gathered reads, in order. */
  | { type: 'data'; id: number; bytes: Uint8Array }
  /** `applied`: false when the process had already exited (nothing was resized). */
  | { type: 'resized'; id: number; cols: number; rows: number; applied: boolean }
  /** The byte source closed; no `data` follows. */
  | { type: 'end'; id: number }
  | { type: 'exit'; id: number; exit: PtyExit }
  /** Input bytes waiting for the program to read them (sent when it changes while any wait). */
  | { type: 'backlog'; id: number; bytes: number }
