/**
 * One sidecar per data directory. A second one would adopt (and then fight over) the first one's
 * terminals, so it must stop before it claims anything: `sidecar.pid` in the data directory, a
 * pid lock (local/pid-lock.ts).
 */
import { join } from 'node:path'
import { lockFile } from '../local/pid-lock.ts'

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

/** Takes the data directory for this process, or throws DataDirBusy; returns the release. */
export function lockDataDir(dataDir: string): () => void {
  return lockFile(join(dataDir, 'sidecar.pid'), SIDECAR_ENTRY, (pid) => new DataDirBusy(dataDir, pid))
}
