/**
 * A journal that cannot write (its file system is full) pauses that terminal's program instead
 * of losing output or taking the keeper or the sidecar down: the unwritten flush waits in the
 * keeper and is retried, the PTY thread stops reading once too much is unconfirmed, and when space
 * returns every byte lands in order, and the sidecar's health says `storage/disk-full` (and
 * `storage/low-space`) meanwhile. The same holds while no sidecar runs at all. The data directory
 * is a small tmpfs (the test needs `mount`, as root; it says so and skips where it cannot mount).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PTY_UNJOURNALED_MAX_BYTES } from '../../../keeper/tuning.ts'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp } from '../../support/terminals.ts'

// After both describes: the mounts, then what they were in.
afterAll(() => {
  if (mounted) execFileSync('umount', ['-l', mnt])
  if (mounted) execFileSync('umount', ['-l', mnt2])
  rmSync(root, { recursive: true, force: true })
  rmSync(shells.dir, { recursive: true, force: true })
})

const MiB = 1024 * 1024
const OUTPUT_BYTES = 2 * MiB
const root = mkdtempSync(join(tmpdir(), 'termkeep-disk-full-'))
const mnt = join(root, 'mnt')
const ballast = join(mnt, 'ballast')
/** A second file system for the keeper on its own (big enough for LATER_BYTES once freed). */
const mnt2 = join(root, 'mnt2')
mkdirSync(mnt)
mkdirSync(mnt2)
let mounted = false
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt], { stdio: 'ignore' })
  mounted = true
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', mnt2], { stdio: 'ignore' })
} catch {
  console.warn('disk-full.test.ts: cannot mount a tmpfs here (needs root); skipped')
}

const goFile = join(root, 'go')
const doneFile = join(root, 'done')
/** More than the keeper holds unwritten (PTY_UNJOURNALED_MAX_BYTES) before it stops reading. */
const LATER_BYTES = 3 * PTY_UNJOURNALED_MAX_BYTES
const shells = shellsFixture({
  flood: `head -c ${OUTPUT_BYTES} /dev/zero | tr '\\0' x; echo; echo FLOOD-END; exec sleep 1000`,
  endless: 'exec yes filling-the-disk',
  // Floods once told to, then notes that it got through (it blocks while its output is not read).
  later: `echo waiting; while [ ! -e ${goFile} ]; do sleep 0.1; done; head -c ${LATER_BYTES} /dev/zero | tr '\\0' y; echo; echo LATER-END; touch ${doneFile}; exec sleep 1000`,
})
let sidecar: RunningSidecar
let http: SidecarHttp
let log = ''
const T = '/v1/sessions/s-full/terminals/flood'

async function journaled(path = T): Promise<string> {
  let text = ''
  for (let after = 0; ; ) {
    const { body } = await http.json('GET', `${path}/output?after=${after}&limit=256`)
    for (const item of body.items) if (item.kind === 'data') text += Buffer.from(item.data, 'base64').toString('latin1')
    if (body.next === after) return text
    after = body.next
  }
}

describe.skipIf(!mounted)('a full disk under the journal', () => {
  beforeAll(async () => {
    // 3 MiB of the 4 taken: the 2 MiB flood fills what is left.
    writeFileSync(ballast, Buffer.alloc(3 * MiB))
    sidecar = await startSidecar({
      dataDir: join(mnt, 'data'),
      databaseUrl: `file:${join(root, 'termkeep.db')}`,
      env: { TERMKEEP_SHELLS_FILE: shells.shellsFile, TERMKEEP_DISK_FREE_MIN_BYTES: String(MiB) },
    })
    sidecar.child.stderr?.on('data', (c: Buffer) => (log += c.toString()))
    http = new SidecarHttp(sidecar)
    await insertSession(sidecar.databaseUrl, 's-full', root)
  })
  afterAll(() => sidecar?.stop())

  it('pauses the program, keeps the sidecar up, and journals every byte once there is space', async () => {
    expect((await http.json('PUT', T, { json: { cols: 80, rows: 24, shell: shells.path('flood') } })).status).toBe(201)
    await waitFor(
      async () => log.includes("journaling a terminal's output (its program is paused meanwhile) failed"),
      30_000,
      'the journal to run out of space',
    )
    // The sidecar still answers, and the terminal is still running (paused, not lost).
    const full = await http.json('GET', '/v1/health')
    expect(full.status).toBe(200)
    // Its health says so: the journal's real write failed (the database, elsewhere, is writable).
    expect(full.body).toMatchObject({ status: 'degraded', database: { writable: true } })
    expect(full.body.problems.map((p: { code: string }) => p.code).sort()).toEqual(['storage/disk-full', 'storage/low-space'])
    expect((await http.json('GET', T)).body.state).toBe('running')
    expect(await journaled()).not.toContain('FLOOD-END')

    rmSync(ballast)
    await waitFor(async () => (await journaled()).includes('FLOOD-END'), 60_000, 'the rest of the output')
    const text = await journaled()
    expect(text.split('x').length - 1).toBe(OUTPUT_BYTES)
    expect(text.endsWith('\r\nFLOOD-END\r\n')).toBe(true)
    expect(log).toContain('works again')
    await waitFor(async () => (await http.json('GET', '/v1/health')).body.status === 'ok', 10_000, 'health to recover')
    expect(log).toContain('termkeep sidecar: recovered: storage/disk-full no longer applies')
  })

  it('closes a terminal paused on a full disk at once, dropping (and counting) what could not be written', async () => {
    const P = '/v1/sessions/s-full/terminals/endless'
    const before = log.length
    expect((await http.json('PUT', P, { json: { cols: 80, rows: 24, shell: shells.path('endless') } })).status).toBe(201)
    await waitFor(async () => log.slice(before).includes('paused meanwhile) failed'), 30_000, 'the disk to fill again')
    const closed = await http.json('DELETE', P)
    expect(closed.status, JSON.stringify(closed.body)).toBe(200)
    expect(closed.body.info.state).toBe('retired')
    expect(log.slice(before)).toMatch(/\d+ bytes of a terminal's output could not be journaled and are lost/)
    expect((await http.json('GET', '/v1/health')).status).toBe(200)
  })
})

describe.skipIf(!mounted)('a full disk while no sidecar runs', () => {
  const data = join(mnt2, 'data')
  const env = { TERMKEEP_SHELLS_FILE: shells.shellsFile, TERMKEEP_DISK_FREE_MIN_BYTES: String(MiB) }
  let own: RunningSidecar | undefined
  afterAll(() => own?.stop())

  it('the keeper stops reading (the program blocks), loses nothing, and resumes: the next sidecar has every byte', async () => {
    own = await startSidecar({ dataDir: data, databaseUrl: `file:${join(root, 'later.db')}`, env })
    const ownHttp = new SidecarHttp(own)
    await insertSession(own.databaseUrl, 's-later', root)
    const P = '/v1/sessions/s-later/terminals/later'
    const text = async () => {
      let out = ''
      for (let after = 0; ; ) {
        const { body } = await ownHttp.json('GET', `${P}/output?after=${after}&limit=256`)
        for (const item of body.items) if (item.kind === 'data') out += Buffer.from(item.data, 'base64').toString('latin1')
        if (body.next === after) return out
        after = body.next
      }
    }
    const created = await ownHttp.json('PUT', P, { json: { cols: 80, rows: 24, shell: shells.path('later') } })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    await waitFor(async () => (await text()).includes('waiting'), 10_000, 'the program')
    await own.kill() // no sidecar from here on: the keeper alone
    // All but 256 KiB taken.
    const free = statfsSync(mnt2)
    writeFileSync(join(mnt2, 'ballast'), Buffer.alloc(free.bavail * free.bsize - 256 * 1024))
    const keeperLog = join(data, 'keeper', 'keeper.log')
    writeFileSync(goFile, '')
    await waitFor(
      async () => readFileSync(keeperLog, 'utf8').includes('journaling s-later/later failed; its program is paused'),
      30_000,
      'the keeper to pause',
    )
    // Blocked, not lost: the program cannot get through its output while the keeper does not read.
    await new Promise((r) => setTimeout(r, 2_000))
    expect(existsSync(doneFile)).toBe(false)
    rmSync(join(mnt2, 'ballast'))
    await waitFor(async () => existsSync(doneFile), 60_000, 'the program to get through')
    expect(readFileSync(keeperLog, 'utf8')).toContain('journaling s-later/later works again')
    own = await startSidecar({ dataDir: data, databaseUrl: own.databaseUrl, env })
    const ownHttp2 = new SidecarHttp(own)
    let out = ''
    for (let after = 0; ; ) {
      const { body } = await ownHttp2.json('GET', `${P}/output?after=${after}&limit=256`)
      for (const item of body.items) if (item.kind === 'data') out += Buffer.from(item.data, 'base64').toString('latin1')
      if (body.next === after) break
      after = body.next
    }
    expect(out.length).toBe(`waiting\r\n`.length + LATER_BYTES + `\r\nLATER-END\r\n`.length)
    expect(out === `waiting\r\n${'y'.repeat(LATER_BYTES)}\r\nLATER-END\r\n`).toBe(true)
  }, 120_000)
})
