/**
 * Free space on the file systems termkeep writes to (Node only: the sidecar, which owns the data
 * directory). A disk that fills up is said before the writes fail (storage/write-failures.ts says
 * it once they do). One statfs per directory: cheap enough for every health answer.
 */
import { statfsSync } from 'node:fs'
import { DISK_FREE_MIN_BYTES } from '../../schema/limits.ts'
import type { HealthFinding } from '../findings.ts'

const MiB = 1024 * 1024

/** A finding when one of `dirs` has less than `minBytes` free for an unprivileged writer; a
 * directory that cannot be examined (gone, no permission) is not this check's to judge. */
export function lowSpace(dirs: readonly string[], minBytes = DISK_FREE_MIN_BYTES): HealthFinding | undefined {
  const low: string[] = []
  for (const dir of new Set(dirs)) {
    let free: number
    try {
      const stat = statfsSync(dir)
      free = stat.bavail * stat.bsize
    } catch {
      continue
    }
    if (free < minBytes) low.push(`${dir} has ${(free / MiB).toFixed(1)} MiB free`)
  }
  if (low.length === 0) return undefined
  return {
    code: 'storage/low-space',
    message: `less than ${(minBytes / MiB).toFixed(1)} MiB free where termkeep writes (its data directory or database): writes fail once it is gone; free space or move the data directory`,
    detail: low.join('; '),
  }
}
