/**
 * CI's check that no keeper a test started outlives the run (`.ci/run`): tests stop their keepers
 * by pid (test/support/keepers.ts); this names any that a test left, and stops it by pid.
 *
 *   node --import tsx scripts/leftover-keepers.ts list > before   # keepers of this checkout now
 *   node --import tsx scripts/leftover-keepers.ts check before    # exit 1 if any new one runs
 *
 * A keeper of this checkout is a process whose command line runs this checkout's keeper/main.ts or
 * its bundle (local/bundle.ts; keepers of other checkouts on the same machine are not this run's).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ENTRY = fileURLToPath(new URL('../keeper/main.ts', import.meta.url))
const BUNDLES = fileURLToPath(new URL('../node_modules/.cache/termkeep/keeper/', import.meta.url))
const isKeeper = (arg: string) => arg === ENTRY || (arg.startsWith(BUNDLES) && /^main-[0-9a-f]+\.mjs$/.test(arg.slice(BUNDLES.length)))
/** How long a leftover keeper gets after SIGTERM (it ends its terminals) before SIGKILL. */
const STOP_WAIT_MS = 5_000

interface Keeper {
  pid: number
  dataDir: string
}

function keepers(): Keeper[] {
  const found: Keeper[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0')
      const at = args.findIndex(isKeeper)
      if (at >= 0) found.push({ pid: Number(entry), dataDir: args[at + 1] ?? '?' })
    } catch {
      // gone
    }
  }
  return found
}

const gone = (pid: number) => {
  try {
    process.kill(pid, 0)
    return readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]?.startsWith('Z') ?? true
  } catch {
    return true
  }
}

async function stop(pids: number[]): Promise<void> {
  for (const pid of pids) process.kill(pid, 'SIGTERM')
  const deadline = Date.now() + STOP_WAIT_MS
  while (pids.some((pid) => !gone(pid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  for (const pid of pids) if (!gone(pid)) process.kill(pid, 'SIGKILL')
}

const [command, file] = process.argv.slice(2)
if (command === 'list') {
  for (const keeper of keepers()) console.log(keeper.pid)
} else if (command === 'check' && file) {
  const before = new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number))
  const left = keepers().filter((keeper) => !before.has(keeper.pid))
  for (const keeper of left) console.error(`leftover keeper: pid ${keeper.pid} keeps ${keeper.dataDir} (a test did not stop it)`)
  await stop(left.map((keeper) => keeper.pid))
  process.exit(left.length > 0 ? 1 : 0)
} else {
  console.error('usage: leftover-keepers.ts list | check <file from list>')
  process.exit(2)
}
