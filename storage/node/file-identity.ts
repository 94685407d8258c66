/**
 * Whether a `file:` database's path still names the file this process opened (Node only: the
 * sidecar and the Node API entry; edge runtimes have no file databases). A database file deleted
 * or replaced under a running termkeep takes every later write with it: SQLite goes on writing
 * into the open (deleted) file, which is gone at the next start, along with every session,
 * terminal and display. `SELECT 1` and even a test write succeed all along; only the file's
 * identity tells.
 */
import { readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

import type { FileFinding } from '../findings.ts'

interface Identity {
  dev: number
  ino: number
}

export class DatabaseFile {
  readonly path: string
  readonly #opened: Identity
  /** `/proc/<pid>/fd/<n>` of the open file, where /proc tells. */
  readonly #fd: string | undefined

  private constructor(path: string, opened: Identity, fd: string | undefined) {
    this.path = path
    this.#opened = opened
    this.#fd = fd
  }

  /**
   * The identity of the database file a `file:` URL names, taken from the file this process has
   * open (/proc/self/fd, Linux) or else from the path, right after it was opened. Undefined for
   * a remote URL or an in-memory database.
   */
  static opened(databaseUrl: string): DatabaseFile | undefined {
    const name = fileDatabaseName(databaseUrl)
    if (name === undefined) return undefined
    let path: string
    try {
      path = resolve(realpathSync(dirname(resolve(name))), name.split('/').at(-1)!)
    } catch {
      return undefined
    }
    const open = openFd(path)
    try {
      const stat = statSync(open ?? path)
      return new DatabaseFile(path, { dev: stat.dev, ino: stat.ino }, open && `/proc/${process.pid}/fd/${open.split('/').at(-1)}`)
    } catch {
      return undefined
    }
  }

  /** A finding when the path no longer names the opened file; undefined while it does. One stat.
   * Its `detail` (paths, where the open file can still be read) is for the log only. */
  check(): FileFinding | undefined {
    let now: Identity
    try {
      const stat = statSync(this.path)
      now = { dev: stat.dev, ino: stat.ino }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined // unreadable directory: not this check's to judge
      return {
        code: 'database/file-deleted',
        message: 'the database file was deleted while termkeep has it open: what is written now is lost when termkeep stops',
        detail: `${this.path} is gone${this.#fd ? `; the open file can still be copied from ${this.#fd}` : ''}`,
      }
    }
    if (now.dev === this.#opened.dev && now.ino === this.#opened.ino) return undefined
    return {
      code: 'database/file-replaced',
      message: 'the database path now names another file than the one termkeep has open: the two no longer agree',
      detail: `${this.path} is not the file termkeep opened (device ${this.#opened.dev}, inode ${this.#opened.ino})${this.#fd ? `; that one is readable at ${this.#fd}` : ''}`,
    }
  }
}

/** Pure: the file name a `file:` database URL names (as given: maybe relative), or undefined for
 * a remote URL or an in-memory database. */
export function fileDatabaseName(databaseUrl: string): string | undefined {
  if (!databaseUrl.startsWith('file:')) return undefined
  const name = decodeURIComponent(
    databaseUrl
      .slice('file:'.length)
      .split('?')[0]!
      .replace(/^\/\/(?=\/)/, ''),
  )
  return name === ':memory:' || name === '' ? undefined : name
}

/** `/proc/self/fd/<n>` of a descriptor this process holds on `path`, or undefined. */
function openFd(path: string): string | undefined {
  let fds: string[]
  try {
    fds = readdirSync('/proc/self/fd')
  } catch {
    return undefined // no /proc (macOS)
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === path) return `/proc/self/fd/${fd}`
    } catch {
      // closed meanwhile (the readdir's own descriptor, say)
    }
  }
  return undefined
}
