/**
 * Two real sidecars of one host on one database: the second refuses to start (one line, exit code
 * 1) while the first runs — with the first's data directory, or another one holding the first's
 * host id — and the first's terminal keeps working; after kill -9 of the first, a new one of the
 * same host starts at once, and retires the first's terminal and kills what it left running once
 * the first's keeper ended too. A sidecar of another host (its own data directory, its own id)
 * starts beside it and touches none of the first's terminals, neither while it runs nor after it
 * crashed.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp } from '../../support/terminals.ts'
import { processStat } from '../../../local/proc.ts'

const work = mkdtempSync(join(tmpdir(), 'termkeep-two-sidecars-'))
const loopFile = join(work, 'loop.pid')
const shells = shellsFixture({
  // Echoes each line; its background loop ignores SIGHUP (it outlives a crash of the sidecar).
  keeper: `trap '' HUP; (while :; do sleep 0.2; done) >/dev/null 2>&1 & echo $! > ${loopFile}; stty -echo; echo ready; while read line; do echo "got:$line"; done`,
})
const env = { TERMKEEP_SHELLS_FILE: shells.shellsFile }
const T = '/v1/sessions/two/terminals/t1'
const alive = (pid: number) => processStat(pid)?.zombie === false
const running: RunningSidecar[] = []
afterAll(async () => {
  for (const sidecar of running) await sidecar.stop()
  if (existsSync(loopFile)) {
    try {
      process.kill(Number(readFileSync(loopFile, 'utf8')), 'SIGKILL')
    } catch {
      // killed, as it should be
    }
  }
})

async function outputText(http: SidecarHttp): Promise<string> {
  const { body } = await http.json('GET', `${T}/output?after=0&limit=256`)
  return body.items
    .map((item: { kind: string; data?: string }) => (item.kind === 'data' ? Buffer.from(item.data!, 'base64').toString() : ''))
    .join('')
}

/** A new data directory that holds `from`'s host id: the same host, started elsewhere. */
function sameHost(from: RunningSidecar): string {
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-same-host-'))
  copyFileSync(join(from.dataDir, 'host.id'), join(dir, 'host.id'))
  return dir
}

describe('a second sidecar on the same database', () => {
  it('refuses while the first runs; starts once the first was killed, and retires and sweeps its terminal once its keeper ended', async () => {
    const first = await startSidecar({ env })
    running.push(first)
    await insertSession(first.databaseUrl, 'two', work)
    const http = new SidecarHttp(first)
    expect((await http.json('PUT', T, { json: { cols: 80, rows: 24, shell: shells.path('keeper') } })).status).toBe(201)
    await waitFor(async () => (await outputText(http)).includes('ready'), 10_000, 'the shell')

    // Another host: it starts, and the first's terminal and its processes are not its to retire.
    const other = await startSidecar({ databaseUrl: first.databaseUrl, dataDir: mkdtempSync(join(tmpdir(), 'termkeep-other-')), env })
    running.push(other)
    expect(other.output()).not.toMatch(/earlier generation/)
    for (const dataDir of [sameHost(first), first.dataDir]) {
      const refused = await startSidecar({ databaseUrl: first.databaseUrl, dataDir, env }).then(
        (sidecar) => (running.push(sidecar), undefined),
        (error: Error) => error.message,
      )
      expect(refused).toMatch(/^sidecar exited with 1 during start:\n/)
      const lines = refused!.split('\n').slice(1).filter(Boolean)
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(
        dataDir === first.dataDir
          ? new RegExp(`^termkeep sidecar: another termkeep sidecar \\(pid ${first.pid}\\) is using the data directory`)
          : new RegExp(
              `^termkeep sidecar: another termkeep sidecar uses this database \\(DATABASE_URL\\): generation ${first.generation}, pid ${first.pid} on .+ \\(its process runs\\); stop it first`,
            ),
      )
    }
    // The first one's terminal is untouched: running, and it still answers.
    expect((await http.json('GET', T)).body.state).toBe('running')
    const ctl = await http.sse(`${T}/follow?attachment=a`)
    await http.fetch('POST', `${T}/input`, { body: 'still here\n', headers: { 'termkeep-attachment': 'a' } })
    await waitFor(async () => (await outputText(http)).includes('got:still here'), 10_000, 'the echo')
    ctl.close()
    const loop = Number(readFileSync(loopFile, 'utf8'))
    expect(alive(loop)).toBe(true)

    await first.kill()
    // The other host restarting after the crash still leaves them alone.
    await other.stop()
    running.splice(running.indexOf(other), 1)
    running.push(await startSidecar({ databaseUrl: first.databaseUrl, dataDir: other.dataDir, env }))
    expect(alive(loop)).toBe(true)
    // The same host started elsewhere: the first's generation ended, but its terminal is held by
    // the first's keeper (another data directory).
    const thirdDir = sameHost(first)
    let third = await startSidecar({ databaseUrl: first.databaseUrl, dataDir: thirdDir, env })
    running.push(third)
    expect(third.generation).toBeGreaterThan(first.generation)
    expect(third.output()).toMatch(new RegExp(`earlier generation\\(s\\) ended: ${first.generation} \\(its process is gone\\)`))
    // Not this one's to retire, nor its processes to kill.
    expect((await new SidecarHttp(third).json('GET', T)).body.state).toBe('running')
    expect(alive(loop)).toBe(true)
    // Once that keeper is gone too, a start of this one retires the terminal and sweeps what it left.
    process.kill(first.keeperPid()!, 'SIGKILL')
    await third.stop({ terminals: 'keep' })
    third = await startSidecar({ databaseUrl: first.databaseUrl, dataDir: thirdDir, env })
    running.push(third)
    await waitFor(async () => !alive(loop), 5_000, 'the leftover loop to be killed')
    expect((await new SidecarHttp(third).json('GET', T)).body.state).toBe('retired')
  }, 90_000)
})
