/**
 * One sidecar per data directory. A second one would retire the first one's live terminals (a
 * new host generation retires every earlier one) and remove its spool files, so it must stop
 * before it claims anything.
 *
 * A pid file, not a lock library: the usual one (proper-lockfile) detects a dead holder by an
 * mtime it refreshes on a timer, so a sidecar restarted right after a crash would be refused for
 * its stale period; a pid check answers at once. The file is published whole with link(2), which
 * fails if it exists (never seen empty); a stale one is moved aside by rename(2), which only one
 * starter can do to the same file, and checked again after the move.
 */
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** What a sidecar's command line names (node … sidecar/main.ts). */
export const SIDECAR_ENTRY = 'sidecar/main'

export class DataDirBusy extends Error {
  override name = 'DataDirBusy'
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`another termkeep sidecar (pid ${pid}) is using the data directory ${dataDir}; stop it first, or set another TERMKEEP_DATA_DIR`)
  }
}

/** Whether `pid` is a running termkeep sidecar (where /proc tells; else: whether it runs). A pid
 * reused after a crash or a reboot by another program does not hold the directory. */
function isSidecar(pid: number): boolean {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
  } catch (error) {
    // EPERM: it exists, as another user's process.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(SIDECAR_ENTRY)
  } catch {
    return true // no /proc (macOS): a live pid is taken for the holder
  }
}

function holder(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10)
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/** Takes the data directory for this process, or throws DataDirBusy; returns the release. */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, 'sidecar.pid')
  const mine = join(dataDir, `sidecar.pid.${process.pid}`)
  writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 })
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(mine, file)
        return release(file)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      const pid = holder(file)
      if (pid !== undefined && isSidecar(pid)) throw new DataDirBusy(dataDir, pid)
      // Stale (its sidecar is gone) or garbled: move it aside, and make sure what moved is what
      // was judged, not a lock another starter published in between (that one is put back).
      const aside = join(dataDir, `sidecar.pid.stale.${process.pid}`)
      try {
        renameSync(file, aside)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
        throw error
      }
      const moved = holder(aside)
      if (moved !== pid && moved !== undefined && isSidecar(moved)) {
        try {
          linkSync(aside, file)
        } finally {
          rmSync(aside, { force: true })
        }
        throw new DataDirBusy(dataDir, moved)
      }
      rmSync(aside, { force: true })
    }
    throw new DataDirBusy(dataDir, holder(file) ?? 0)
  } finally {
    rmSync(mine, { force: true })
  }
}

function release(file: string): () => void {
  let released = false
  return () => {
    if (released) return
    released = true
    if (holder(file) === process.pid) rmSync(file, { force: true })
  }
}
