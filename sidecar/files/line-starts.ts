/**
 * A small memory of where lines start, per file version, so paging through a large file reads
 * each byte about once instead of rescanning from the top for every page. Keyed by the opaque
 * version (device, inode, size, mtime, ctime): any change to the file is a new key, so a stale
 * position is never used. Bounded in files and in positions per file.
 */
const MAX_FILES = 64
const MAX_POSITIONS_PER_FILE = 1024

export class LineStarts {
  /** version → (line → byte where it starts); Map order doubles as LRU order. */
  readonly #files = new Map<string, Map<number, number>>()

  /** The known start at or before `line` (line 1 at byte 0 when nothing closer is known). */
  nearest(version: string, line: number): { line: number; byte: number } {
    const positions = this.#files.get(version)
    let best = { line: 1, byte: 0 }
    if (!positions) return best
    this.#files.delete(version)
    this.#files.set(version, positions)
    for (const [known, byte] of positions) if (known <= line && known > best.line) best = { line: known, byte }
    return best
  }

  remember(version: string, line: number, byte: number): void {
    let positions = this.#files.get(version)
    if (!positions) {
      if (this.#files.size >= MAX_FILES) this.#files.delete(this.#files.keys().next().value!)
      positions = new Map()
      this.#files.set(version, positions)
    }
    if (positions.size >= MAX_POSITIONS_PER_FILE) positions.delete(positions.keys().next().value!)
    positions.set(line, byte)
  }
}
