/**
 * One sidecar per data directory. A second one would retire the first one's live terminals (a
 * new host generation retires every earlier one) and remove its spool files, so it must stop
 * before it claims anything.
 *
 * A pid file taken with O_EXCL, not a lock library: the usual one (proper-lockfile) detects a
 * dead holder by an mtime it refreshes on a timer, so a sidecar restarted right after a crash
 * would be refused for its stale period; a pid check answers at once. Kept to what the sidecar
 * needs: take, find a dead holder, release.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'

export class DataDirBusy extends Error {
  override name = 'DataDirBusy'
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`another termkeep sidecar (pid ${pid}) is using the data directory ${dataDir}; stop it first, or set another TERMKEEP_DATA_DIR`)
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it exists, as another user's process.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
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
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600)
      writeSync(fd, `${process.pid}\n`)
      closeSync(fd)
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const pid = holder(file)
      if (pid !== undefined && pid !== process.pid && alive(pid)) throw new DataDirBusy(dataDir, pid)
      // Left by a holder that is gone (or half-written): take it over, once.
      if (attempt > 0) throw new DataDirBusy(dataDir, pid ?? 0)
      rmSync(file, { force: true })
    }
  }
  let released = false
  return () => {
    if (released) return
    released = true
    if (holder(file) === process.pid) rmSync(file, { force: true })
  }
}
