/**
 * Idle release end to end, with the real sidecar: a quiet terminal with no follower gives its
 * emulator back once its revision is written; a screen read, a follow and new output each bring
 * it back (from the revision plus the journal after it); what comes back is the same screen — the
 * follow snapshot is identical, and after more output the persisted display equals that of an
 * emulator that parsed the whole journal; the revision after a rebuild writes no history twice.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import serializeModule from '@xterm/addon-serialize'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chunksOf, latestRevision } from '../../../storage/displays/revisions.ts'
import type { OutputPage } from '../../../schema/wire/output.ts'
import { openStorage, type Storage } from '../../../storage/client.ts'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp } from '../../support/terminals.ts'
import type { DisplayStats } from '../../../sidecar/display/service.ts'
import { emulator, referenceRevision } from '../../support/display/harness.ts'
import { cursorRestoreSuffix } from '../../../common/xterm/snapshot-suffix.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-release-'))
const FIFO = join(dir, 'more')
const E = '\\033'
// Coloured history, then hidden state: a region, a saved cursor, tab stops, DEC line drawing.
const FEED = String.raw`i=0; while [ $i -lt 300 ]; do printf '${E}[3%dm%05d${E}[0m %s\r\n' $((i % 8)) $i "row of history $i"; i=$((i+1)); done
printf '${E}[3g${E}[1;9H${E}H${E}[1;21H${E}H${E}[2;10r${E}[5;7H${E}7${E}[12;1H${E}[1;35mready${E}(0'`
const PROGRAM = `stty -echo
${FEED}
while :; do IFS= read -r line < ${FIFO}; printf '%s' "$line"; done`
const PROBE = `\x1b8X\t\tT\x1b[3b\x1b(B\n\n\n\n\n\n\n\n\n\nafter ${'more '.repeat(5)}`

const shells = shellsFixture({ fifo: PROGRAM })
const T = '/v1/sessions/s/terminals/t'
let sidecar: RunningSidecar
let http: SidecarHttp
let storage: Storage

beforeAll(async () => {
  execFileSync('mkfifo', [FIFO])
  sidecar = await startSidecar({ env: { TERMKEEP_SHELLS_FILE: shells.shellsFile, TERMKEEP_EMULATOR_RELEASE_MS: '400' } })
  http = new SidecarHttp(sidecar)
  await insertSession(sidecar.databaseUrl, 's', dir)
  storage = await openStorage({ url: sidecar.databaseUrl })
})
afterAll(async () => {
  await sidecar?.stop()
  storage?.close()
  rmSync(dir, { recursive: true, force: true })
  rmSync(shells.dir, { recursive: true, force: true })
})

const stats = async () => ((await http.json('GET', '/v1/display/stats')).body as DisplayStats).terminals.find((t) => t.key === 's/t')!
const released = (atLeast: number) =>
  waitFor(async () => ((await stats())?.released && (await stats()).releases >= atLeast) || undefined, 20_000, `release ${atLeast}`)

async function snapshot(): Promise<{ sequence: number; screen: string }> {
  const follow = await http.sse(`${T}/follow?attachment=a${Date.now()}`)
  const first = await follow.until((m) => m.event === 'snapshot')
  follow.close()
  return first.data as unknown as { sequence: number; screen: string }
}

/** A fresh emulator fed the whole journal: what the sidecar's should be. */
async function direct() {
  const e = emulator(40, 12)
  for (let after = 0; ; ) {
    const page = (await http.json('GET', `${T}/output?after=${after}`)).body as OutputPage
    for (const item of page.items) if (item.kind === 'data') await e.write(Buffer.from(item.data, 'base64'))
    if (page.next === after || page.items.length === 0) break
    after = page.next
  }
  return e
}

async function storedBodies(): Promise<string[]> {
  const header = (await latestRevision(storage.db, 's', 't'))!
  const bodies: string[] = []
  for await (const body of chunksOf(storage.db, header)) bodies.push(body)
  return bodies
}

describe('idle release', () => {
  it('gives a quiet emulator back and rebuilds the same screen for a read, a follow and new output', async () => {
    expect((await http.json('PUT', T, { json: { cols: 40, rows: 12, shell: shells.path('fifo') } })).status).toBe(201)
    await waitFor(
      async () => JSON.stringify((await http.json('GET', `${T}/screen`)).body).includes('ready') || undefined,
      20_000,
      'the program',
    )
    const screenBefore = (await http.json('GET', `${T}/screen`)).body
    const before = await snapshot()

    await released(1)
    expect((await stats()).restores).toBe(0)
    expect((await http.json('GET', `${T}/screen`)).body).toEqual(screenBefore)
    expect((await stats()).restores).toBe(1)

    await released(2)
    const again = await snapshot()
    expect(again.screen).toBe(before.screen)
    expect(again.sequence).toBeLessThanOrEqual(before.sequence)
    expect((await stats()).restores).toBe(2)

    // New output with nobody watching: the screen comes back by itself and settles.
    await released(3)
    const bytesBefore = (await stats()).bytesWritten
    const sequenceBefore = (await stats()).appliedSequence
    writeFileSync(FIFO, `${PROBE}\n`)
    const reference = await waitFor(
      async () => {
        const s = await stats()
        if (s.appliedSequence <= sequenceBefore || s.writtenSequence < s.appliedSequence) return undefined
        const e = await direct()
        const expected = referenceRevision(e.tracker, { sequence: s.appliedSequence })
        const bodies = await storedBodies()
        return JSON.stringify(bodies) === JSON.stringify(expected.chunks) ? { e, expected } : undefined
      },
      20_000,
      'the display after the new output to equal a full parse',
    )
    expect((await stats()).restores).toBe(3)
    // The revision after the rebuild continued the stored history: no row of it written again.
    expect((await stats()).bytesWritten - bytesBefore).toBeLessThan(reference.expected.encodedBytes / 3)
    // And the follow snapshot is what the full parse serializes to.
    const now = await snapshot()
    const serializer = new serializeModule.SerializeAddon()
    reference.e.terminal.loadAddon(serializer)
    expect(now.screen).toBe(serializer.serialize() + cursorRestoreSuffix(reference.e.terminal))
  })
})
