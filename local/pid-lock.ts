/**
 * One holder per lock file: the sidecar's per data directory (sidecar.pid) and the keeper's
 * (keeper/keeper.pid). A second process would do harm (a second sidecar retires the first one's
 * terminals; a second keeper could not listen, and would sweep the first one's journals), so it
 * must stop before it does anything.
 *
 * A pid file, not a lock library: the usual one (proper-lockfile) detects a dead holder by an
 * mtime it refreshes on a timer, so a process restarted right after a crash would be refused for
 * its stale period; a pid check answers at once. The file is published whole with link(2), which
 * fails if it exists (never seen empty); a stale one is moved aside by rename(2), which only one
 * starter can do to the same file, and checked again after the move. A holder is a live process
 * whose command line names `entry` (a pid reused by another program after a crash or a reboot
 * does not hold it).
 */
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'

/** Whether `pid` is a running process whose command line names `entry` (where /proc tells;
 * else: whether it runs). */
export function isHolder(pid: number, entry: string): boolean {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
  } catch (error) {
    // EPERM: it exists, as another user's process.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1')
    // A zombie has an empty command line: it holds nothing.
    return cmdline.includes(entry)
  } catch {
    return true // no /proc (macOS): a live pid is taken for the holder
  }
}

/** The pid a lock file names, or undefined. */
export function lockHolder(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10)
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/** The live holder of `file`, or undefined. */
export function liveHolder(file: string, entry: string): number | undefined {
  const pid = lockHolder(file)
  return pid !== undefined && isHolder(pid, entry) ? pid : undefined
}

/** Takes `file` for this process, or throws `busy(pid)`; returns the release. */
export function lockFile(file: string, entry: string, busy: (pid: number) => Error): () => void {
  const mine = `${file}.${process.pid}`
  writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 })
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(mine, file)
        return release(file)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      const pid = lockHolder(file)
      if (pid !== undefined && isHolder(pid, entry)) throw busy(pid)
      // Stale (its holder is gone) or garbled: move it aside, and make sure what moved is what
      // was judged, not a lock another starter published in between (that one is put back).
      const aside = `${file}.stale.${process.pid}`
      try {
        renameSync(file, aside)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
        throw error
      }
      const moved = lockHolder(aside)
      if (moved !== pid && moved !== undefined && isHolder(moved, entry)) {
        try {
          linkSync(aside, file)
        } finally {
          rmSync(aside, { force: true })
        }
        throw busy(moved)
      }
      rmSync(aside, { force: true })
    }
    throw busy(lockHolder(file) ?? 0)
  } finally {
    rmSync(mine, { force: true })
  }
}

function release(file: string): () => void {
  let released = false
  return () => {
    if (released) return
    released = true
    if (lockHolder(file) === process.pid) rmSync(file, { force: true })
  }
}
