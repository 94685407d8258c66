/**
 * A journal that cannot write (its file system is full) pauses that terminal's program instead
 * of losing output or taking the sidecar down: the unwritten flush waits and is retried, the PTY
 * thread stops reading once too much is unconfirmed, and when space returns every byte lands in
 * order, and health says `storage/disk-full` (and `storage/low-space`) meanwhile. The data directory is a small tmpfs (the test needs `mount`, as root; it says so and
 * skips where it cannot mount).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp } from '../../support/terminals.ts'

const MiB = 1024 * 1024
const OUTPUT_BYTES = 2 * MiB
const root = mkdtempSync(join(tmpdir(), 'termkeep-disk-full-'))
const mnt = join(root, 'mnt')
const ballast = join(mnt, 'ballast')
mkdirSync(mnt)
let mounted = false
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt], { stdio: 'ignore' })
  mounted = true
} catch {
  console.warn('disk-full.test.ts: cannot mount a tmpfs here (needs root); skipped')
}

const shells = shellsFixture({
  flood: `head -c ${OUTPUT_BYTES} /dev/zero | tr '\\0' x; echo; echo FLOOD-END; exec sleep 1000`,
  endless: 'exec yes filling-the-disk',
})
let sidecar: RunningSidecar
let http: SidecarHttp
let log = ''
const T = '/v1/sessions/s-full/terminals/flood'

async function journaled(): Promise<string> {
  let text = ''
  for (let after = 0; ; ) {
    const { body } = await http.json('GET', `${T}/output?after=${after}&limit=256`)
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
  afterAll(async () => {
    await sidecar?.stop()
    if (mounted) execFileSync('umount', ['-l', mnt])
    rmSync(root, { recursive: true, force: true })
    rmSync(shells.dir, { recursive: true, force: true })
  })

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
