/**
 * `termkeep stop [--terminals]`: stops what runs for this machine's data directory. Without
 * --terminals, `termkeep serve` (or a sidecar started on its own): the API and the sidecar stop,
 * the keeper and its terminals run on (the next start adopts them). With --terminals, everything,
 * as tmux's kill-server: the keeper first (its terminals' processes are ended, the running sidecar
 * retires them and saves their last screens), then serve, then a keeper that sidecar may have
 * started meanwhile. Every process is found by its pid file and signalled by pid.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { keeperPaths } from '../local/keeper/paths.ts'
import { KEEPER_ENTRY } from '../local/keeper/start.ts'
import { liveHolder } from '../local/pid-lock.ts'
import { processStat } from '../local/proc.ts'
import type { Config } from '../schema/config.ts'
import { join } from 'node:path'
import { SIDECAR_ENTRY } from '../sidecar/data-dir-lock.ts'
import { keptRunning } from './keeper.ts'
import { exactArgs, HELP_OPTION, printedHelp } from './usage.ts'

const USAGE = `usage: termkeep stop [--terminals]

  Stops termkeep serve (the API and the sidecar) for TERMKEEP_DATA_DIR; its terminals keep running
  in the keeper and the next start adopts them. --terminals ends them too, and the keeper.`

/** How long a stopped process may take before stop says it did not go. */
const STOP_WAIT_MS = 30_000
/** Serve's command line: node, one of the CLI's entries, then `serve` (npm start runs cli/bin.js,
 * as `./termkeep` and a linked or installed `termkeep` do through their own path; cli/main.ts
 * under tsx is the same CLI). */
function isServe(pid: number): boolean {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')
    const entry = args.findIndex((arg) => /(?:^|\/)(?:cli\/main\.ts|cli\/bin\.js|termkeep)$/.test(arg))
    return entry > 0 && args.slice(entry + 1).includes('serve')
  } catch {
    return false // gone
  }
}

export async function stopCommand(config: Config, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...HELP_OPTION, terminals: { type: 'boolean', default: false } },
    allowPositionals: true,
  })
  if (printedHelp(values, USAGE)) return 0
  exactArgs(positionals, [], 'stop')
  const keeperLock = keeperPaths(config.dataDir).lock
  let stopped = 0
  if (values.terminals) {
    const keeper = liveHolder(keeperLock, KEEPER_ENTRY)
    if (keeper !== undefined) {
      const count = await keptRunning(config.dataDir)
      if (!(await terminate(keeper))) return failed(`the keeper (pid ${keeper}) did not stop`)
      console.log(`termkeep: ended the keeper (pid ${keeper})${count === undefined ? '' : ` and its ${count} running terminal(s)`}`)
      stopped++
    }
  }
  const sidecar = liveHolder(join(config.dataDir, 'sidecar.pid'), SIDECAR_ENTRY)
  if (sidecar !== undefined) {
    // Under serve, serve is stopped (it stops its sidecar and its API); else the sidecar alone.
    const parent = processStat(sidecar)?.ppid
    const serve = parent !== undefined && isServe(parent) ? parent : undefined
    if (!(await terminate(serve ?? sidecar)))
      return failed(`${serve ? 'termkeep serve' : 'the sidecar'} (pid ${serve ?? sidecar}) did not stop`)
    console.log(`termkeep: stopped ${serve ? `termkeep serve (pid ${serve})` : `the sidecar (pid ${sidecar})`}`)
    stopped++
  }
  if (values.terminals) {
    // A sidecar that saw its keeper end started another one before it stopped.
    const late = liveHolder(keeperLock, KEEPER_ENTRY)
    if (late !== undefined && !(await terminate(late))) return failed(`the keeper (pid ${late}) did not stop`)
  } else {
    const count = await keptRunning(config.dataDir)
    if (count) console.log(`termkeep: ${count} terminal(s) keep running in the keeper; \`termkeep stop --terminals\` ends them`)
  }
  if (stopped === 0) console.log(`termkeep: nothing to stop for ${config.dataDir}`)
  return 0
}

function failed(line: string): number {
  console.error(`termkeep: ${line}`)
  return 1
}

/** SIGTERM to `pid`, then waits until it is gone; false when it is still there after STOP_WAIT_MS. */
async function terminate(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 'SIGTERM')
  } catch {
    return true // gone already
  }
  const deadline = Date.now() + STOP_WAIT_MS
  for (;;) {
    const stat = processStat(pid)
    if (stat === undefined || stat.zombie) return true
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
