/**
 * The keeper process (started detached by local/keeper/start.ts; argv: the data directory). It
 * keeps the terminals of one data directory alive across everything else's restarts: it owns
 * their PTYs, journals their output and answers the sidecar on its socket. Wiring only:
 * take the lock, sweep what a dead keeper left, listen, and stop on SIGTERM or when idle.
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { keeperPaths } from '../local/keeper/paths.ts'
import { keeperSecret } from '../local/keeper/proof.ts'
import { KEEPER_ENTRY } from '../local/keeper/start.ts'
import { lockFile } from '../local/pid-lock.ts'
import { bootId, processStat } from '../local/proc.ts'
import { SOFTWARE_VERSION } from '../local/version.ts'
import { log } from './log.ts'
import { sweepEarlierKeepers } from './records.ts'
import { KeeperServer } from './server.ts'
import { KeptTerminals } from './terminals.ts'
import { KEEPER_FLUSH_WAIT_MS, keeperIdleExitMs } from './tuning.ts'
import { writeHopTrace } from '../local/hop-trace.ts'

class KeeperBusy extends Error {}

async function main(): Promise<void> {
  writeHopTrace()
  const dataDir = process.argv[2]
  if (!dataDir) throw new Error('usage: keeper/main.ts <data directory>')
  const idleExitMs = keeperIdleExitMs()
  const paths = keeperPaths(dataDir)
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 })
  const unlock = lockFile(paths.lock, KEEPER_ENTRY, (pid) => new KeeperBusy(`another keeper (pid ${pid}) keeps ${dataDir}; this one stops`))
  process.once('exit', unlock)
  const secret = keeperSecret(paths.secret)
  const instance = `${process.pid}-${randomBytes(4).toString('hex')}`
  const swept = await sweepEarlierKeepers(paths.journals, instance)
  if (swept.killed.size > 0) {
    const list = [...swept.killed].map(([terminal, pids]) => `${terminal}: ${pids.join(' ')}`).join('; ')
    log(`killed what a dead keeper's terminals left running (${list})`)
  }
  if (swept.survivors.length > 0) log(`processes of a dead keeper's terminals survived SIGKILL: ${swept.survivors.join(' ')}`)
  const own = join(paths.journals, instance)
  const terminals = new KeptTerminals(own)
  const info = {
    pid: process.pid,
    startTicks: processStat(process.pid)?.startTicks ?? null,
    bootId: bootId() ?? null,
    software: SOFTWARE_VERSION,
    startedAt: Date.now(),
  }
  const server = new KeeperServer(paths, secret, info, terminals)
  await server.listen()
  log(`pid ${process.pid} (termkeep ${SOFTWARE_VERSION}) keeps ${dataDir}`)

  let stopping = false
  const stop = async (why: string) => {
    if (stopping) return
    stopping = true
    log(`stopping (${why}): ending ${terminals.size} terminal(s)`)
    server.close()
    server.announceStop()
    const survivors = await terminals.stop()
    if (survivors.length > 0) log(`processes survived SIGKILL: ${survivors.join(' ')}`)
    await server.disconnectAll(KEEPER_FLUSH_WAIT_MS)
    rmSync(own, { recursive: true, force: true })
    unlock()
    process.exit(0)
  }
  process.once('SIGTERM', () => void stop('SIGTERM'))
  process.once('SIGINT', () => void stop('SIGINT'))
  // No terminal sends it a hangup (it has none); a stray one must not end every shell.
  process.on('SIGHUP', () => log('SIGHUP ignored (SIGTERM stops the keeper and its terminals)'))
  const idle = setInterval(
    () => {
      if (terminals.size > 0 || server.hasSidecar) return
      if (Date.now() - server.lastSidecarAt >= idleExitMs) void stop('no terminal and no sidecar')
    },
    Math.min(1_000, idleExitMs / 4),
  )
  idle.unref()
}

main().catch((error: unknown) => {
  log(error instanceof KeeperBusy ? error.message : 'failed at its start', error instanceof KeeperBusy ? undefined : error)
  process.exit(1)
})
