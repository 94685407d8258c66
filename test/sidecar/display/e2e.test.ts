/**
 * End to end with the real sidecar process, a real PTY and the API: a program's coloured screen
 * settles into libSQL; the plain projection answers while it runs; readDisplay serves the same
 * colours with the sidecar stopped, and again after a restart on the same database.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../api/app.ts'
import { createToken } from '../../../storage/tokens.ts'
import { decodeDisplay, type DecodedDisplay } from '../../../common/display/decode.ts'
import { SidecarClient } from '../../../api/sidecar-client.ts'
import type { DisplayBegin, DisplayEnd, RowsEvent, ScreenProjection } from '../../../schema/wire/display.ts'
import { openStorage, type Storage } from '../../../storage/client.ts'
import { migrate } from '../../../storage/migrate.ts'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp } from '../../support/terminals.ts'
import { readAllEvents } from '../../support/display/sse.ts'

const PROGRAM = String.raw`printf '\033]2;e2e title\007\033[1;31mred bold\033[0m \033[38;2;10;200;30mrgb\033[0m\r\n\033[44m   \033[0m spaces\r\n\033[45mtail\033[K\033[0m\r\n'
exec sleep 120`
/** Emoji and a check mark (two cells each since Unicode 9), then a row written to its last column. */
const WIDE = String.raw`\360\237\230\200x\342\234\205y\360\237\221\215z`
const EDGES = String.raw`printf '${WIDE}\r\n'
printf '%040d' 0
exec sleep 120`

let dir: string
let storage: Storage
let sidecar: RunningSidecar | undefined
let token: string
let fixture: ReturnType<typeof shellsFixture>

function app(url: string, secret: string) {
  return createApp({ db: storage.db, client: storage.client, sidecar: new SidecarClient({ url, secret }), runtime: 'node' })
}

async function readDisplay(a: ReturnType<typeof app>, tid = 't'): Promise<DecodedDisplay | undefined> {
  const response = await a.request(`/v1/sessions/s/terminals/${tid}/display`, { headers: { authorization: `Bearer ${token}` } })
  if (response.status === 404) return undefined
  const events = await readAllEvents(response)
  const begin = JSON.parse(events[0].data) as DisplayBegin
  const end = JSON.parse(events.at(-1)!.data) as DisplayEnd
  const parts = events.filter((e) => e.event === 'rows').map((e) => JSON.parse(e.data) as RowsEvent)
  return decodeDisplay(begin, parts, end)
}

const text = (row: { cells: { chars: string }[] }) =>
  row.cells
    .map((c) => c.chars || ' ')
    .join('')
    .trimEnd()

function colours(display: DecodedDisplay) {
  const [r0, r1, r2] = display.viewport
  const style = (row: typeof r0, x: number) => display.styles[row.cells[x].style]
  return {
    red: style(r0, 0),
    rgb: style(r0, 9),
    spaces: style(r1, 0),
    tail: style(r2, 0),
    erased: { ...style(r2, 10), blank: r2.cells[10]?.blank },
    title: display.begin.title,
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'termkeep-display-e2e-'))
  fixture = shellsFixture({ colours: PROGRAM, quick: 'printf done; exit 0', idle: 'printf idle; exec sleep 120', edges: EDGES })
  sidecar = await startSidecar({ dataDir: dir, env: { TERMKEEP_SHELLS_FILE: fixture.shellsFile } })
  await insertSession(sidecar.databaseUrl, 's', dir)
  storage = await openStorage({ url: sidecar.databaseUrl })
  await migrate(storage.client)
  token = (await createToken(storage.db, { name: 'd', grants: ['terminals:display', 'terminals:screen'], sessions: 'all' })).secret
})
afterAll(async () => {
  await sidecar?.stop()
  storage?.close()
  rmSync(dir, { recursive: true, force: true })
  rmSync(fixture.dir, { recursive: true, force: true })
})

describe('display end to end', () => {
  it('keeps the colours across a sidecar stop and restart', async () => {
    const http = new SidecarHttp(sidecar!)
    const created = await http.json('PUT', '/v1/sessions/s/terminals/t', { json: { cols: 60, rows: 10, shell: fixture.path('colours') } })
    expect(created.status).toBe(201)
    const live = app(sidecar!.url, sidecar!.secret)

    const settled = await waitFor(
      async () => {
        const d = await readDisplay(live)
        return d && text(d.viewport[2]) === 'tail' ? d : undefined
      },
      30_000,
      'a settled display',
    )
    const expected = {
      red: { fg: 1, a: 1 },
      rgb: { fg: '#0ac81e' },
      spaces: { bg: 4 },
      tail: { bg: 5 },
      erased: { bg: 5, blank: true },
      title: 'e2e title',
    }
    expect(colours(settled)).toEqual(expected)
    expect(settled.viewport.slice(0, 3).map(text)).toEqual(['red bold rgb', '    spaces', 'tail'])

    const screen = await live.request('/v1/sessions/s/terminals/t/screen', { headers: { authorization: `Bearer ${token}` } })
    expect(screen.status).toBe(200)
    const projection = (await screen.json()) as ScreenProjection
    expect(projection.lines.slice(projection.viewportStart, projection.viewportStart + 3)).toEqual(['red bold rgb', '    spaces', 'tail'])
    expect(projection.title).toBe('e2e title')

    // screen/watch: the current projection at once (relayed through the API), as an SSE event.
    const watch = await live.request('/v1/sessions/s/terminals/t/screen/watch', { headers: { authorization: `Bearer ${token}` } })
    expect(watch.status).toBe(200)
    const reader = watch.body!.getReader()
    let received = ''
    while (!/event: screen[\s\S]*data: \{.*\}\n/.test(received)) received += new TextDecoder().decode((await reader.read()).value)
    await reader.cancel()
    const data = received
      .split('\n')
      .find((l) => l.startsWith('data: {'))!
      .slice(6)
    expect((JSON.parse(data) as ScreenProjection).lines).toContain('red bold rgb')

    await sidecar!.stop()
    const stopped = await readDisplay(live)
    expect(colours(stopped!)).toEqual(expected)
    expect(stopped!.begin.revision).toBeGreaterThanOrEqual(settled.begin.revision)

    sidecar = await startSidecar({ dataDir: dir, databaseUrl: sidecar!.databaseUrl, env: { TERMKEEP_SHELLS_FILE: fixture.shellsFile } })
    const restarted = await readDisplay(app(sidecar.url, sidecar.secret))
    expect(colours(restarted!)).toEqual(expected)
    expect(restarted!.viewport.slice(0, 3).map(text)).toEqual(['red bold rgb', '    spaces', 'tail'])
  })

  it('draws emoji two cells wide, as tmux does, and puts the plain cursor where the display does after a full row', async () => {
    const http = new SidecarHttp(sidecar!)
    expect(
      (await http.json('PUT', '/v1/sessions/s/terminals/edges', { json: { cols: 40, rows: 5, shell: fixture.path('edges') } })).status,
    ).toBe(201)
    const live = app(sidecar!.url, sidecar!.secret)
    const display = await waitFor(
      async () => {
        const d = await readDisplay(live, 'edges')
        return d && text(d.viewport[1] ?? { cells: [] }).length === 40 ? d : undefined
      },
      30_000,
      'a settled display',
    )
    const cells = display.viewport[0].cells
    expect(cells.map((c) => c.width)).toEqual([2, 0, 1, 2, 0, 1, 2, 0, 1])
    expect(cells.filter((c) => c.width !== 0).map((c) => c.chars)).toEqual(['\u{1F600}', 'x', '\u2705', 'y', '\u{1F44D}', 'z'])
    // The last column was written: a wrap is pending, and both views say column 40.
    expect(display.begin.cursor).toMatchObject({ row: 1, col: 40 })
    const screen = (await (
      await live.request('/v1/sessions/s/terminals/edges/screen', { headers: { authorization: `Bearer ${token}` } })
    ).json()) as ScreenProjection
    expect(screen.cursor).toMatchObject({ row: 1, col: 40 })
    // tmux, fed the same bytes, puts the cursor after the same number of cells.
    const socket = `termkeep-widths-${process.pid}`
    const run = (...args: string[]) => execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' })
    try {
      run('-u', 'new-session', '-d', '-x', '40', '-y', '5', `printf '${WIDE}'; sleep 30`)
      const x = await waitFor(
        async () => {
          const at = Number(run('display-message', '-p', '#{cursor_x}').trim())
          return at > 0 ? at : undefined
        },
        10_000,
        'tmux to draw',
      )
      expect(x).toBe(cells.length)
    } finally {
      try {
        run('kill-server')
      } catch {
        // already gone
      }
    }
  })

  it('ends screen/watch at once for a terminal whose program already exited', async () => {
    const http = new SidecarHttp(sidecar!)
    expect(
      (await http.json('PUT', '/v1/sessions/s/terminals/quick', { json: { cols: 40, rows: 5, shell: fixture.path('quick') } })).status,
    ).toBe(201)
    await waitFor(
      async () => (await http.json('GET', '/v1/sessions/s/terminals/quick')).body.state === 'exited',
      10_000,
      'the program to exit',
    )
    const started = Date.now()
    const watch = await http.sse('/v1/sessions/s/terminals/quick/screen/watch')
    const closed = await watch.until((m) => m.event === 'closed')
    watch.close()
    expect(closed.event).toBe('closed')
    // Not after a heartbeat interval (15 s): nothing more can change this screen.
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it('ends screen/watch soon after a quiet terminal is closed (its output ends with nothing to show)', async () => {
    const http = new SidecarHttp(sidecar!)
    expect(
      (await http.json('PUT', '/v1/sessions/s/terminals/idle', { json: { cols: 40, rows: 5, shell: fixture.path('idle') } })).status,
    ).toBe(201)
    const watch = await http.sse('/v1/sessions/s/terminals/idle/screen/watch')
    await watch.until((m) => m.event === 'screen' && (m.data as ScreenProjection).lines.includes('idle'))
    // Quiet long enough that the screen settled and the watch waits for news.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const started = Date.now()
    expect((await http.json('DELETE', '/v1/sessions/s/terminals/idle')).status).toBe(200)
    const closed = await watch.until((m) => m.event === 'closed')
    watch.close()
    expect(closed.event).toBe('closed')
    // Not at the next heartbeat (15 s): the end of the output is news by itself.
    expect(Date.now() - started).toBeLessThan(8_000)
  })
})
