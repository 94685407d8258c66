/**
 * Where the keeper of a data directory keeps its things: everything in `<data dir>/keeper/`,
 * created private (0700), so another user cannot reach the socket or read the journals whatever
 * their own modes.
 */
import { join, resolve } from 'node:path'

export interface KeeperPaths {
  dir: string
  /** The Unix socket it listens on (0600). */
  socket: string
  /** The secret both sides prove they hold (0600; proof.ts). */
  secret: string
  /** Its pid lock: one keeper per data directory. */
  lock: string
  /** Its log (stdout and stderr): it has no terminal. */
  log: string
  /** One directory per keeper instance, each holding its terminals' journals. */
  journals: string
}

/** The longest path a Unix socket address holds on Linux (sun_path is 108 bytes with its NUL). */
const SOCKET_PATH_MAX = 107

export function keeperPaths(dataDir: string): KeeperPaths {
  const dir = join(resolve(dataDir), 'keeper')
  return {
    dir,
    socket: join(dir, 'socket'),
    secret: join(dir, 'secret'),
    lock: join(dir, 'keeper.pid'),
    log: join(dir, 'keeper.log'),
    journals: join(dir, 'journals'),
  }
}

/** Why the socket cannot live at `paths.socket`, or undefined. */
export function socketPathProblem(paths: KeeperPaths): string | undefined {
  const length = Buffer.byteLength(paths.socket)
  if (length <= SOCKET_PATH_MAX) return undefined
  return `the keeper's socket path ${paths.socket} is ${length} bytes, more than a Unix socket address holds (${SOCKET_PATH_MAX}); use a shorter TERMKEEP_DATA_DIR`
}
