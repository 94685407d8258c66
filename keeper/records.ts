/**
 * What a keeper leaves on disk for the next one: each terminal's journal files and its identity
 * (`<terminal>.identity`: the shell's pid, start time and boot, and the terminal's marks), under
 * a directory of its own instance. A keeper killed with -9 (or lost with its machine's power)
 * cannot end its terminals' processes: the kernel hangs up their PTYs, which ends most programs,
 * but not those that ignore SIGHUP. The next keeper, at its start, kills those (proven by the
 * identity, never by a pid alone: identity.ts) and removes what the dead one left.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { SweepTarget } from '../local/keeper/protocol.ts'
import { removeSpoolTree } from '../local/journal/remove-tree.ts'
import { killLeftovers, type Sweep } from './orphans.ts'

/** Writes a terminal's identity beside its journal. */
export function writeIdentity(path: string, identity: SweepTarget): void {
  writeFileSync(path, `${JSON.stringify(identity)}\n`, { mode: 0o600 })
}

/** The identities every instance directory but `own` holds, and those directories. */
function leftBehind(journals: string, own: string): { dirs: string[]; terminals: SweepTarget[] } {
  let instances: string[]
  try {
    instances = readdirSync(journals).filter((name) => name !== own)
  } catch {
    return { dirs: [], terminals: [] }
  }
  const terminals: SweepTarget[] = []
  for (const instance of instances) {
    const dir = join(journals, instance)
    for (const session of safeList(dir)) {
      for (const file of safeList(join(dir, session))) {
        if (!file.endsWith('.identity')) continue
        try {
          terminals.push(JSON.parse(readFileSync(join(dir, session, file), 'utf8')) as SweepTarget)
        } catch {
          // torn or unreadable: its processes cannot be proven anyone's, so they are left alone
        }
      }
    }
  }
  return { dirs: instances.map((instance) => join(journals, instance)), terminals }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

/** At a keeper's start: kills what earlier keepers' terminals left running and removes their
 * journals. Resolves with what was killed (for the log). */
export async function sweepEarlierKeepers(journals: string, own: string): Promise<Sweep> {
  const { dirs, terminals } = leftBehind(journals, own)
  const sweep = await killLeftovers(terminals)
  for (const dir of dirs) removeSpoolTree(dir)
  return sweep
}
