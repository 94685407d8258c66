/**
 * Removing journals that nothing reads any more (an earlier sidecar's or keeper's, at start).
 * Each file is emptied before it is unlinked: unlinking removes only this name, and a hard link a
 * process in the terminal made to its journal (it can, as its user) would otherwise keep the
 * whole output outside the data directory, where nothing knows it as termkeep's.
 */
import { closeSync, constants, fstatSync, ftruncateSync, openSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Removes a tree of spool files (an earlier sidecar's or keeper's, at start), each emptied before it is
 * unlinked, as a released spool is. A name is opened without following a symlink and emptied
 * only when it is a regular file: a link planted in the spool never truncates what it points at.
 */
export function removeSpoolTree(dir: string): void {
  const entries = (() => {
    try {
      return readdirSync(dir, { withFileTypes: true })
    } catch {
      return []
    }
  })()
  for (const entry of entries) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) removeSpoolTree(path)
    else if (entry.isFile()) emptyFile(path)
  }
  rmSync(dir, { recursive: true, force: true })
}

/** Empties a regular file in place (a symlink at `path` is never followed). */
export function emptyFile(path: string): void {
  let fd: number
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return // gone, or not ours to open: removed below all the same
  }
  try {
    if (fstatSync(fd).isFile()) ftruncateSync(fd, 0)
  } finally {
    closeSync(fd)
  }
}
