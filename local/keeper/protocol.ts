/**
 * The keeper protocol: how a sidecar (or the CLI) talks to the keeper of its data directory over
 * the keeper's Unix socket (paths.ts). One contract, two sides: the keeper (keeper/server.ts)
 * implements it, `KeeperClient` (client.ts) speaks it.
 *
 * Frames (frames.ts): u32 little-endian length of what follows, u8 kind, payload. Kinds:
 * - JSON (1): one UTF-8 JSON message, the shapes below;
 * - INPUT (2), client → keeper: u32 terminal id, then the raw input bytes;
 * - KEYED_INPUT (4), client → keeper: u32 terminal id, u16 length of a JSON `KeptInputKey`, that
 *   JSON, then the raw input bytes (a batch sent under an Idempotency-Key: the keeper remembers
 *   the key with the batch, for a sidecar that adopts the terminal later);
 * - RECORDS (3), keeper → sidecar: u32 terminal id, f64 first sequence, u32 entry count, u32 byte
 *   count, the entries (ENTRY_BYTES each, exactly as in the index file), then the Data records'
 *   bytes back to back when the byte count is not 0 (the keeper leaves them out while the sidecar
 *   lags: it then reads them from the spool).
 * The hot paths (input, output) carry raw bytes behind a fixed header: no JSON, no base64.
 *
 * The handshake never changes, whatever the version, so that any two releases can at least tell
 * each other apart: the client sends `hello` (the protocol versions it speaks, a nonce), the keeper
 * answers `welcome` (the one version it speaks, its own nonce, and its proof that it holds the data
 * directory's keeper secret), the client checks that proof and sends `auth` (its own proof), the
 * keeper answers `ready` or `refused` (proof.ts). A client that does not speak the keeper's version
 * stops there and says what to do.
 *
 * Versions: KEEPER_PROTOCOL is what this release's keeper speaks; CLIENT_PROTOCOLS every version
 * this release's sidecar can drive (a newer sidecar keeps the older versions it can still speak, so
 * an upgrade keeps the running keeper and its shells). docs/operations.md lists the releases that
 * changed it.
 */

export const KEEPER_PROTOCOL = 1
export const CLIENT_PROTOCOLS: readonly number[] = [1]

export const FRAME_JSON = 1
export const FRAME_INPUT = 2
export const FRAME_RECORDS = 3
export const FRAME_KEYED_INPUT = 4
/** A frame longer than this is a broken peer (the biggest real one is a 1 MiB flush). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024
/** RECORDS header after the kind byte: id, first sequence, entry count, byte count. */
export const RECORDS_HEADER_BYTES = 4 + 8 + 4 + 4

export type Role = 'sidecar' | 'control'

/** The keeper, as it introduces itself. */
export interface KeeperInfo {
  pid: number
  /** Its start time (clock ticks since boot, /proc field 22): with the pid, it names the process. */
  startTicks: number | null
  bootId: string | null
  /** The termkeep release that started it (package.json version). */
  software: string
  startedAt: number
}

export interface SpawnOptions {
  file: string
  args: string[]
  cwd: string
  env: Record<string, string>
  cols: number
  rows: number
}

/** What proves a process a terminal's (keeper/identity.ts). */
export interface KeptIdentity {
  leaderPid: number
  leaderStartTicks: number
  bootId: string
}

export interface KeptExit {
  exitCode: number | null
  signal: number | null
  /** When the keeper saw it (epoch ms). */
  at: number
}

/** One terminal the keeper holds, as `list` and `spawn` report it. */
export interface KeptTerminalState {
  id: number
  sessionId: string
  terminalId: string
  pid: number
  ttyIndex?: number
  identity?: KeptIdentity
  journal: {
    spool: string
    index: string
    startedAt: number
    initialCols: number
    initialRows: number
    /** Records written so far; the sidecar reads this many entries from the index. */
    lastSequence: number
  }
  /** The geometry after the last Resize record. */
  cols: number
  rows: number
  /** The byte source reached EOF. */
  ended: boolean
  exit: KeptExit | null
  /** Input bytes the program has not read yet. */
  backlog: number
  /** The journal cannot be written now (a full disk): the program is paused. */
  failing?: { message: string; code?: string }
  /** The Idempotency-Keys of input batches sent lately (at most INPUT_KEYS_REMEMBERED). */
  inputKeys: KeptInputKey[]
}

/** An input batch's Idempotency-Key as the sidecar remembers it (sidecar/terminals/input-keys.ts). */
export interface KeptInputKey {
  id: string
  fingerprint: string
  at: number
}

/** A terminal of an earlier keeper (or sidecar) whose leftovers are to be killed (`sweep`). */
export interface SweepTarget extends KeptIdentity {
  sessionId: string
  id: string
}

export type ClientMessage =
  | { type: 'hello'; protocols: readonly number[]; role: Role; nonce: string; software: string }
  | { type: 'auth'; proof: string }
  | { type: 'list'; req: number }
  | { type: 'spawn'; req: number; sessionId: string; terminalId: string; options: SpawnOptions }
  | { type: 'resize'; req: number; id: number; cols: number; rows: number }
  /** Kills the terminal's processes (proven its own), waits for the end of its output. */
  | { type: 'close'; req: number; id: number; graceMs: number }
  /** Forgets a closed terminal and removes its journal files. */
  | { type: 'release'; req: number; id: number }
  | { type: 'sweep'; req: number; terminals: SweepTarget[] }

export type KeeperMessage =
  | { type: 'welcome'; protocol: number; nonce: string; proof: string; keeper: KeeperInfo }
  | { type: 'ready' }
  | { type: 'refused'; reason: string }
  | { type: 'reply'; req: number; ok: true; value: unknown }
  | { type: 'reply'; req: number; ok: false; error: string }
  | { type: 'end'; id: number }
  | { type: 'exit'; id: number; exit: KeptExit }
  | { type: 'backlog'; id: number; bytes: number }
  /** The journal could not be written (sent at every failed try) or writes again. */
  | { type: 'trouble'; id: number; failing: boolean; message?: string; code?: string }
  /** Output given up on: a force-close of a terminal paused on a full disk. */
  | { type: 'lost'; id: number; bytes: number; message: string }
  /** The keeper is stopping (SIGTERM): its terminals end, then the connection. */
  | { type: 'stopping' }

/** Replies by request. */
export interface Replies {
  list: KeptTerminalState[]
  spawn: KeptTerminalState
  resize: null
  close: { survivors: number[] }
  release: null
  sweep: { killed: Record<string, number[]>; survivors: number[] }
}
