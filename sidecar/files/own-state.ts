/**
 * termkeep's own state on disk is never something the sidecar serves: the data directory (the
 * database, the keeper's directory with every terminal's output journal and the keeper's secret,
 * the sidecar secret — which alone grants full sidecar authority — and the locks), and a `file:`
 * DATABASE_URL's database with its -wal,
 * -shm and -journal wherever it lives. Not to a workspace's files/ routes (a workspace is often
 * the checkout, whose ./data is the default data directory), not to observation (whose home
 * usually holds it). Inside it a path answers exactly as an absent one does.
 *
 * Compared by identity (device + inode), never by path: a symlinked path, a bind mount of the data
 * directory or a hard link of one of its files elsewhere all lead to the same inodes. An object is
 * termkeep's when it is one of the own files, is the data directory, or lies beneath it (its
 * ancestors, walked on the kernel's path of the opened descriptor); a regular file with more than
 * one link on the data directory's device is also looked for among the data directory's files (a
 * hard-link copy of a journal, as `cp -al` backups make).
 *
 * Declared once at start-up (sidecar/main.ts): one process has one data directory, and every
 * confined open (files/confine.ts) consults it whichever route asked — so no route can forget.
 */
import type { BigIntStats } from 'node:fs'
import { lstat, readdir, stat } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { OWN_STATE_MAX_SCANNED } from '../tuning.ts'
import { fileDatabaseName } from '../../storage/node/file-identity.ts'

export interface OwnStatePaths {
  dataDir: string
  /** A `file:` URL names a database file that may lie outside the data directory. */
  databaseUrl?: string
}

interface Declared {
  dataDir: string
  files: string[]
}

let declared: Declared | undefined

/** Declares this process's own state (undefined: none, for in-process tests of other things). */
export function declareOwnState(paths: OwnStatePaths | undefined): void {
  declared = paths && { dataDir: resolve(paths.dataDir), files: ownFiles(paths) }
}

/** Pure: the own files a configuration names beside the data directory itself. */
function ownFiles(paths: OwnStatePaths): string[] {
  const files = [join(resolve(paths.dataDir), 'sidecar.secret')]
  const name = paths.databaseUrl === undefined ? undefined : fileDatabaseName(paths.databaseUrl)
  if (name !== undefined) {
    const db = resolve(name)
    files.push(db, `${db}-wal`, `${db}-shm`, `${db}-journal`)
  }
  return files
}

const keyOf = (stats: Pick<BigIntStats, 'dev' | 'ino'>) => `${stats.dev}:${stats.ino}`

/**
 * termkeep's own state as of one look: the identities of the data directory and the own files,
 * taken when the look is, so a database file replaced meanwhile is recognized by its new inode.
 * One look serves one request (a listing's whole walk); ancestor verdicts are remembered in it.
 */
export class OwnStateLook {
  readonly #dataDir: BigIntStats | undefined
  readonly #dataDirPath: string
  readonly #files: ReadonlySet<string>
  readonly #beneath = new Map<string, Promise<boolean>>()
  #linked: Promise<ReadonlySet<string> | 'too-many'> | undefined

  private constructor(dataDirPath: string, dataDir: BigIntStats | undefined, files: ReadonlySet<string>) {
    this.#dataDirPath = dataDirPath
    this.#dataDir = dataDir
    this.#files = files
  }

  /** A look at the declared own state; undefined when none was declared. */
  static async take(): Promise<OwnStateLook | undefined> {
    const own = declared
    if (!own) return undefined
    const [dataDir, ...files] = await Promise.all(
      [own.dataDir, ...own.files].map((path) => stat(path, { bigint: true }).catch(() => undefined)),
    )
    const keys = new Set(files.filter((s): s is BigIntStats => s !== undefined).map(keyOf))
    return new OwnStateLook(own.dataDir, dataDir?.isDirectory() ? dataDir : undefined, keys)
  }

  /** Is this object (by its stats) the data directory, an own file, or a hard link of a file in
   * the data directory? Where it lies is not looked at (see `covers`). */
  async isOwn(stats: BigIntStats): Promise<boolean> {
    const key = keyOf(stats)
    if (this.#files.has(key) || (this.#dataDir !== undefined && key === keyOf(this.#dataDir))) return true
    if (!stats.isFile() || stats.nlink < 2n || this.#dataDir === undefined || stats.dev !== this.#dataDir.dev) return false
    const linked = await (this.#linked ??= this.#dataDirFiles())
    return linked === 'too-many' || linked.has(key)
  }

  /** Is the object at canonical `path` (with `stats`) termkeep's own, or beneath the data directory? */
  async covers(path: string, stats: BigIntStats): Promise<boolean> {
    return (await this.isOwn(stats)) || (path !== dirname(path) && this.#isOrBeneathOwn(dirname(path)))
  }

  /** Is the directory at canonical `dir` the data directory or beneath it? An ancestor that cannot
   * be looked at (gone meanwhile) counts as own: the answer is then "absent", never its content. */
  #isOrBeneathOwn(dir: string): Promise<boolean> {
    let verdict = this.#beneath.get(dir)
    if (!verdict) {
      verdict = (async () => {
        const stats = await lstat(dir, { bigint: true }).catch(() => undefined)
        if (!stats) return true
        if (this.#dataDir !== undefined && keyOf(stats) === keyOf(this.#dataDir)) return true
        return dir !== dirname(dir) && this.#isOrBeneathOwn(dirname(dir))
      })()
      this.#beneath.set(dir, verdict)
    }
    return verdict
  }

  /** The identities of every regular file beneath the data directory (bounded). */
  async #dataDirFiles(): Promise<ReadonlySet<string> | 'too-many'> {
    const found = new Set<string>()
    let scanned = 0
    const queue = [this.#dataDirPath]
    while (queue.length > 0) {
      const dir = queue.shift()!
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
      for (const entry of entries) {
        if (++scanned > OWN_STATE_MAX_SCANNED) return 'too-many'
        const path = join(dir, entry.name)
        if (entry.isDirectory()) queue.push(path)
        else if (entry.isFile()) {
          const stats = await lstat(path, { bigint: true }).catch(() => undefined)
          if (stats?.isFile() && stats.nlink > 1n) found.add(keyOf(stats))
        }
      }
    }
    return found
  }
}
