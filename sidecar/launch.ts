/**
 * How a launcher starts the sidecar process (cli/serve.ts, and the tests' and benchmarks'
 * test/support/sidecar.ts: what is tested and measured is what runs): from a bundle of its sources
 * (local/bundle.ts says why and how), or, in an installation where it cannot be built or written,
 * under tsx as before.
 */
import { fileURLToPath } from 'node:url'
import { BUNDLE_NODE_FLAGS, bundled } from '../local/bundle.ts'

const SOURCE = fileURLToPath(new URL('./main.ts', import.meta.url))

export interface SidecarLaunch {
  /** The module to start. */
  entry: string
  /** Node options it needs before the sidecar's own (SIDECAR_NODE_FLAGS). */
  execArgv: string[]
}

/** The bundle, built first when a source changed; tsx and the source when it cannot be. */
export async function sidecarLaunch(): Promise<SidecarLaunch> {
  try {
    return { entry: await bundled(SOURCE), execArgv: [...BUNDLE_NODE_FLAGS] }
  } catch (error) {
    console.warn(`termkeep: starting the sidecar under tsx (its bundle could not be built: ${(error as Error).message})`)
    return { entry: SOURCE, execArgv: ['--import', import.meta.resolve('tsx')] }
  }
}
