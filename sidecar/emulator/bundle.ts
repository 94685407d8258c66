/**
 * The emulator worker's code as one plain-JavaScript module (local/worker-bundle.ts): started
 * through tsx, each emulator worker cost +25 to +40 MiB RSS, more than ten quiet terminals'
 * screens; from the bundle ~6 MiB.
 */
import { workerBundleSource } from '../../local/worker-bundle.ts'

/** The worker's module as a `data:` URL (built or read from the cache on first use). */
export function emulatorWorkerSource(): URL {
  return workerBundleSource(new URL('./worker.ts', import.meta.url))
}
