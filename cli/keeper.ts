/**
 * What `termkeep serve` and `termkeep stop` ask the data directory's keeper: how many terminals
 * it keeps running. A control connection (it never starts a keeper and gets no output).
 */
import { KeeperClient } from '../local/keeper/client.ts'
import { keeperPaths } from '../local/keeper/paths.ts'
import { SOFTWARE_VERSION } from '../local/version.ts'

/** How long a question to the keeper may take before it counts as not answered. */
const KEEPER_QUESTION_MS = 5_000

/** The keeper's running terminals (programs that have not exited), or undefined when no keeper
 * answers. */
export async function keptRunning(dataDir: string): Promise<number | undefined> {
  let client: KeeperClient | undefined
  try {
    client = await KeeperClient.connect(keeperPaths(dataDir), {
      role: 'control',
      software: SOFTWARE_VERSION,
      timeoutMs: KEEPER_QUESTION_MS,
    })
    const terminals = await client.request('list', {})
    return terminals.filter((t) => t.exit === null).length
  } catch {
    return undefined
  } finally {
    client?.close()
  }
}

/** "3 terminals keep running; `termkeep stop --terminals` ends them", or nothing for none. */
export function keepRunningLine(count: number | undefined): string | undefined {
  if (!count) return undefined
  return `termkeep: ${count} terminal${count === 1 ? ' keeps' : 's keep'} running; \`termkeep stop --terminals\` ends ${count === 1 ? 'it' : 'them'}`
}
