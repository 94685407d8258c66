/**
 * Live terminals through the real sidecar process over HTTP: create/list/info, exclusive control,
 * bad input, close with process-session kill, retirement and restart.
 */
import { existsSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_INPUT_BACKLOG_BYTES, MAX_INPUT_BYTES, MAX_JSON_BODY_BYTES, MAX_TERMINALS_PER_SESSION } from '../../../schema/limits.ts'
import { openStorage } from '../../../storage/client.ts'
import { keeperPaths } from '../../../local/keeper/paths.ts'
import { allProcesses } from '../../../local/proc.ts'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp, type SseStream } from '../../support/terminals.ts'

const work = mkdtempSync(join(tmpdir(), 'termkeep-lifecycle-'))
const shells = shellsFixture({
  // Prints a marker and waits for input lines; "q" ends it.
  echoer: `stty -echo; echo ready; while read line; do [ "$line" = q ] && exit 3; echo "got:$line"; done`,
  // Stays active (output refreshes the idle clock) until its hold exists, then goes quiet.
  // Never reads its input.
  sleeper: 'stty raw -echo; exec sleep 1000',
  // Leaves a loop that ignores SIGHUP (and its children) behind and exits: its pid may be reused.
  // (The trap is set before the fork: a subshell setting it itself may be hung up first.)
  leaver: `trap '' HUP; (while :; do sleep 0.2; done) >/dev/null 2>&1 & echo $! > ${join(work, 'leaver.pid')}; exit 0`,
  ticker: `while [ ! -e ${join(work, 'held.go')} ]; do echo tick; sleep 0.2; done; exec sleep 1000`,
})
let sidecar: RunningSidecar
let http: SidecarHttp
const SID = 'sess-life'
const T = (tid: string) => `/v1/sessions/${SID}/terminals/${tid}`
const streams: SseStream[] = []
let sidecarLog = ''

async function follow(tid: string, attachment: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const stream = await http.sse(`${T(tid)}/follow?attachment=${attachment}`, headers)
  streams.push(stream)
  return stream
}

async function outputText(tid: string): Promise<string> {
  let text = ''
  for (let after = 0; ; ) {
    const { body } = await http.json('GET', `${T(tid)}/output?after=${after}&limit=256`)
    for (const item of body.items) if (item.kind === 'data') text += Buffer.from(item.data, 'base64').toString()
    if (body.next === after) return text
    after = body.next
  }
}

const input = (tid: string, attachment: string | undefined, text: string | Uint8Array<ArrayBuffer>) =>
  http.fetch('POST', `${T(tid)}/input`, { body: text, headers: attachment ? { 'termkeep-attachment': attachment } : {} })

const gone = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].startsWith('Z')
  } catch {
    return true
  }
}

beforeAll(async () => {
  // A short busy timeout: the database-lock tests hold a write lock, and each write that waits for
  // it blocks the sidecar's main thread that long.
  sidecar = await startSidecar({ env: { TERMKEEP_SHELLS_FILE: shells.shellsFile, SHELL: '/bin/sh', TERMKEEP_DB_BUSY_TIMEOUT_MS: '300' } })
  http = new SidecarHttp(sidecar)
  sidecar.child.stderr?.on('data', (c: Buffer) => (sidecarLog += c.toString()))
  sidecar.child.stdout?.on('data', (c: Buffer) => (sidecarLog += c.toString()))
  await insertSession(sidecar.databaseUrl, SID, work)
})
afterAll(async () => {
  for (const s of streams) s.close()
  await sidecar?.stop()
  rmSync(work, { recursive: true, force: true })
  rmSync(shells.dir, { recursive: true, force: true })
})

describe('session-level routes', () => {
  it('environment gives the session cwd and the limits; shells lists verified shells, default first', async () => {
    const env = await http.json('GET', `/v1/sessions/${SID}/terminal-environment`)
    expect(env.status).toBe(200)
    expect(env.body.cwd).toBe(work)
    expect(env.body.limits).toMatchObject({ maxInputBytes: MAX_INPUT_BYTES, minCols: 2, maxCols: 1024, maxVisibleCells: 65536 })
    const { body } = await http.json('GET', `/v1/sessions/${SID}/shells`)
    expect(body.shells[0]).toEqual({ path: '/bin/sh', args: [], name: 'sh' })
    expect(body.shells.map((s: { path: string }) => s.path)).toContain(shells.path('echoer'))
  })

  it('answers an unknown session with session/not-found and creates nothing', async () => {
    for (const path of ['/v1/sessions/nope/terminal-environment', '/v1/sessions/nope/shells', '/v1/sessions/nope/terminals']) {
      const r = await http.json('GET', path)
      expect([r.status, r.body.error.code]).toEqual([404, 'session/not-found'])
    }
    const r = await http.json('PUT', '/v1/sessions/nope/terminals/t1', { json: { cols: 80, rows: 24 } })
    expect([r.status, r.body.error.code]).toEqual([404, 'session/not-found'])
  })
})

describe('create', () => {
  it('is idempotent on the caller id and joins a pending create', async () => {
    const results = await Promise.all(
      [1, 2, 3].map(() => http.json('PUT', T('idem'), { json: { cols: 90, rows: 30, shell: shells.path('echoer') } })),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 201])
    const info = results[0].body
    expect(info).toMatchObject({
      id: 'idem',
      sessionId: SID,
      cols: 90,
      rows: 30,
      cwd: work,
      state: 'running',
      hostGeneration: sidecar.generation,
    })
    for (const r of results) expect(r.body.createdAt).toBe(info.createdAt)
    // Joiners waited for the spawn: none was told "starting" (a failed spawn would fail them too).
    expect(results.map((r) => r.body.state)).toEqual(['running', 'running', 'running'])
    const again = await http.json('PUT', T('idem'), { json: { cols: 20, rows: 5 } })
    expect([again.status, again.body.cols]).toEqual([200, 90])
    const list = await http.json('GET', `/v1/sessions/${SID}/terminals`)
    expect(list.body.terminals.filter((t: { id: string }) => t.id === 'idem')).toHaveLength(1)
    // The row is in libSQL, where the API reads it.
    const storage = await openStorage({ url: sidecar.databaseUrl })
    const rows = await storage.client.execute({
      sql: 'SELECT state, cols FROM terminals WHERE session_id = ? AND id = ?',
      args: [SID, 'idem'],
    })
    storage.close()
    expect(rows.rows[0]).toMatchObject({ state: 'running', cols: 90 })
  })

  it.each([
    ['a bad id', 'bad.id!', { cols: 80, rows: 24 }, 400, 'terminal/invalid-id'],
    ['too few columns', 'g1', { cols: 1, rows: 24 }, 400, 'terminal/invalid-geometry'],
    ['too many rows', 'g2', { cols: 80, rows: 1025 }, 400, 'terminal/invalid-geometry'],
    ['too many cells', 'g3', { cols: 300, rows: 300 }, 400, 'terminal/invalid-geometry'],
    ['fractional geometry', 'g4', { cols: 80.5, rows: 24 }, 400, 'terminal/invalid-geometry'],
    ['an uninstalled shell', 'g5', { cols: 80, rows: 24, shell: '/usr/bin/python3' }, 400, 'terminal/shell-not-allowed'],
    ['a blank title', 'g6', { cols: 80, rows: 24, title: '   ' }, 400, 'request/invalid'],
  ])('refuses %s with a typed error and creates nothing', async (_what, tid, body, status, code) => {
    const r = await http.json('PUT', `/v1/sessions/${SID}/terminals/${encodeURIComponent(tid)}`, { json: body })
    expect([r.status, r.body.error.code]).toEqual([status, code])
    const list = await http.json('GET', `/v1/sessions/${SID}/terminals`)
    expect(list.body.terminals.map((t: { id: string }) => t.id)).not.toContain(tid)
  })

  it('counts concurrent creates once against the per-session limit', async () => {
    const sid = 'sess-limit'
    await insertSession(sidecar.databaseUrl, sid, work)
    const P = (tid: string) => `/v1/sessions/${sid}/terminals/${tid}`
    const ids = Array.from({ length: MAX_TERMINALS_PER_SESSION }, (_, i) => `n${i}`)
    try {
      const created = await Promise.all(
        ids.map((tid) => http.json('PUT', P(tid), { json: { cols: 80, rows: 24, shell: shells.path('sleeper') } })),
      )
      expect(created.map((r) => r.status)).toEqual(ids.map(() => 201))
      const over = await http.json('PUT', P('one-more'), { json: { cols: 80, rows: 24, shell: shells.path('sleeper') } })
      expect([over.status, over.body.error.code]).toEqual([409, 'terminal/limit-reached'])
    } finally {
      await Promise.all(ids.map((tid) => http.json('DELETE', P(tid))))
    }
  })

  it('refuses an oversized JSON body (413) and tells a bad page limit from a bad cursor', async () => {
    const big = JSON.stringify({ title: 'x'.repeat(MAX_JSON_BODY_BYTES) })
    const r = await http.json('PATCH', T('idem'), { body: big, headers: { 'content-type': 'application/json' } })
    expect([r.status, r.body.error.code]).toEqual([413, 'request/too-large'])
    for (const [query, code] of [
      ['after=0&limit=0', 'request/invalid'],
      ['after=0&limit=abc', 'request/invalid'],
      ['after=-1', 'output/invalid-cursor'],
    ]) {
      const page = await http.json('GET', `${T('idem')}/output?${query}`)
      expect([query, page.status, page.body.error.code]).toEqual([query, 400, code])
    }
  })

  it('answers 503 database/unavailable (not 500) while the database takes no writes, and works once it does', async () => {
    const storage = await openStorage({ url: sidecar.databaseUrl })
    const lock = await storage.client.transaction('write')
    try {
      await lock.execute("UPDATE sessions SET cwd = cwd WHERE id = 'nobody'")
      const refused = await http.json('PUT', T('db-locked'), { json: { cols: 80, rows: 24 } })
      expect(refused.status, JSON.stringify(refused.body)).toBe(503)
      expect(refused.body.error.code).toBe('database/unavailable')
    } finally {
      await lock.rollback()
      storage.close()
    }
    // The refused create left nothing behind: the same id is created now.
    const { status } = await http.json('PUT', T('db-locked'), { json: { cols: 80, rows: 24 } })
    expect(status).toBe(201)
    await http.json('DELETE', T('db-locked'))
  })

  it('keeps a rename and an exit that the database could not take, and writes them once it can', async () => {
    await http.json('PUT', T('db-retry'), { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
    const ctl = await follow('db-retry', 'r')
    await ctl.until((m) => m.event === 'snapshot')
    await waitFor(async () => (await outputText('db-retry')).includes('ready'), 10_000, 'ready')
    const storage = await openStorage({ url: sidecar.databaseUrl })
    // Each read on a connection of its own: the one that held the lock may keep an old snapshot.
    const row = async () => {
      const reader = await openStorage({ url: sidecar.databaseUrl })
      try {
        return (await reader.client.execute("SELECT title, state, exit_code FROM terminals WHERE id = 'db-retry'")).rows[0]
      } finally {
        reader.close()
      }
    }
    try {
      const lock = await storage.client.transaction('write')
      try {
        await lock.execute("UPDATE sessions SET cwd = cwd WHERE id = 'nobody'")
        const renamed = await http.json('PATCH', T('db-retry'), { json: { title: 'while locked' } })
        expect(renamed.status, JSON.stringify(renamed.body)).toBe(503)
        expect(renamed.body.error.code).toBe('database/unavailable')
        await input('db-retry', 'r', 'q\n')
        await ctl.until((m) => m.event === 'state' && m.data.info.state === 'exited')
      } finally {
        await lock.rollback()
      }
      // Both changes were kept and land once the database takes writes again (retried with backoff).
      await waitFor(async () => (await row())?.exit_code === 3, 20_000, 'the exit to be written').catch(async (e) => {
        throw new Error(`${e.message}; row ${JSON.stringify(await row())}; sidecar said:\n${sidecarLog.slice(-4000)}`)
      })
      expect(await row()).toMatchObject({ title: 'while locked', state: 'exited', exit_code: 3 })
    } finally {
      storage.close()
    }
  })

  it('answers unknown terminals with terminal/not-found everywhere', async () => {
    for (const [method, path] of [
      ['GET', T('ghost')],
      ['GET', `${T('ghost')}/output`],
      ['GET', `${T('ghost')}/output/watch`],
      ['GET', `${T('ghost')}/follow?attachment=a`],
      ['POST', `${T('ghost')}/input`],
      ['DELETE', T('ghost')],
    ]) {
      const r = await http.json(method, path)
      expect([path, r.status, r.body.error.code]).toEqual([path, 404, 'terminal/not-found'])
    }
  })
})

describe('control', () => {
  it('gives exclusive control to the newest attachment; earlier ones become read-only and are told', async () => {
    await http.json('PUT', T('ctl'), { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
    const first = await follow('ctl', 'first')
    const snapshot = await first.until((m) => m.event === 'snapshot')
    expect(snapshot.data.info.controllerId).toBe('first')
    await waitFor(async () => (await outputText('ctl')).includes('ready'), 10_000, 'ready')
    expect((await input('ctl', 'first', 'one\n')).status).toBe(204)
    await first.until((m) => m.event === 'output' && Buffer.from(m.data.data, 'base64').toString().includes('got:one'))

    const second = await follow('ctl', 'second')
    await second.until((m) => m.event === 'snapshot')
    // The state that moves control (a state for another change, the foreground program's, may come first).
    const told = await first.until((m) => m.event === 'state' && m.data.info.controllerId !== 'first')
    expect(told.data.info.controllerId).toBe('second')

    const refused = await input('ctl', 'first', 'two\n')
    expect(refused.status).toBe(409)
    expect((await refused.json()).error).toMatchObject({ code: 'terminal/control-unavailable', reason: 'read-only' })
    const noHeader = await input('ctl', undefined, 'three\n')
    expect(noHeader.status).toBe(409)
    const resize = await http.json('POST', `${T('ctl')}/resize`, {
      json: { cols: 100, rows: 30 },
      headers: { 'termkeep-attachment': 'first' },
    })
    expect([resize.status, resize.body.error.code]).toEqual([409, 'terminal/control-unavailable'])

    expect((await input('ctl', 'second', 'four\n')).status).toBe(204)
    await second.until((m) => m.event === 'output' && Buffer.from(m.data.data, 'base64').toString().includes('got:four'))
    const text = await outputText('ctl')
    expect(text).toContain('got:one')
    expect(text).toContain('got:four')
    expect(text).not.toContain('two') // refused input is never replayed
    expect(text).not.toContain('three')

    // The controller's stream ends: control is released, nobody controls.
    second.close()
    await waitFor(async () => (await http.json('GET', T('ctl'))).body.controllerId === null, 10_000, 'release')
  })

  it('gives control to the attachment id and the principal that followed with it, not the id alone', async () => {
    const owner = await follow('ctl', 'owned', { 'termkeep-principal': 'tok_owner' })
    try {
      const snapshot = await owner.until((m) => m.event === 'snapshot')
      expect(snapshot.data.info.controllerId).toBe('owned')
      const as = (principal?: string) =>
        http.json('POST', `${T('ctl')}/input`, {
          body: 'x',
          headers: { 'termkeep-attachment': 'owned', ...(principal ? { 'termkeep-principal': principal } : {}) },
        })
      for (const principal of ['tok_other', undefined]) {
        const refused = await as(principal)
        expect([refused.status, refused.body.error.code, refused.body.error.reason]).toEqual([
          409,
          'terminal/control-unavailable',
          'read-only',
        ])
      }
      const resize = await http.json('POST', `${T('ctl')}/resize`, {
        json: { cols: 90, rows: 20 },
        headers: { 'termkeep-attachment': 'owned', 'termkeep-principal': 'tok_other' },
      })
      expect(resize.status).toBe(409)
      expect((await as('tok_owner')).status).toBe(204)
      const bad = await http.json('POST', `${T('ctl')}/input`, {
        body: 'x',
        headers: { 'termkeep-attachment': 'owned', 'termkeep-principal': 'no spaces' },
      })
      expect([bad.status, bad.body.error.code]).toEqual([400, 'request/invalid'])
    } finally {
      owner.close()
    }
  })

  it('refuses input a program does not read beyond the backlog limit (409), not piling it up', async () => {
    await http.json('PUT', T('deaf'), { json: { cols: 80, rows: 24, shell: shells.path('sleeper') } })
    const deaf = await follow('deaf', 'typist')
    try {
      await deaf.until((m) => m.event === 'snapshot')
      const chunk = new Uint8Array(MAX_INPUT_BYTES).fill(0x61)
      const statuses: number[] = []
      let refused: any
      for (let i = 0; i < (3 * MAX_INPUT_BACKLOG_BYTES) / MAX_INPUT_BYTES && !refused; i++) {
        const r = await http.json('POST', `${T('deaf')}/input`, { body: chunk, headers: { 'termkeep-attachment': 'typist' } })
        statuses.push(r.status)
        if (r.status !== 204) refused = r
        // The PTY thread reports input left waiting asynchronously; let its report land.
        else await new Promise((resolve) => setTimeout(resolve, 10))
      }
      expect(refused?.status, `statuses ${statuses.join(',')}`).toBe(409)
      expect(refused.body.error).toMatchObject({ code: 'terminal/input-backlog-full', limit: MAX_INPUT_BACKLOG_BYTES })
      // Accepted input is bounded by the limit (plus what the kernel's PTY buffer took), not by the sender.
      expect((statuses.length - 1) * MAX_INPUT_BYTES).toBeLessThanOrEqual(MAX_INPUT_BACKLOG_BYTES + 2 * MAX_INPUT_BYTES)
    } finally {
      deaf.close()
      await http.json('DELETE', T('deaf'))
    }
  })

  it('keeps control while the attachment still has an open stream (two follows of one id, one closes)', async () => {
    const a1 = await follow('ctl', 'twice')
    await a1.until((m) => m.event === 'snapshot')
    const a2 = await follow('ctl', 'twice')
    await a2.until((m) => m.event === 'snapshot')
    a2.close()
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await http.json('GET', T('ctl'))).body.controllerId).toBe('twice')
    expect((await input('ctl', 'twice', 'still\n')).status).toBe(204)
    a1.close()
    await waitFor(async () => (await http.json('GET', T('ctl'))).body.controllerId === null, 10_000, 'release after the last stream')
  })

  it('applies concurrent resizes one at a time: every answer is a size the PTY had, the last one wins', async () => {
    const c = await follow('ctl', 'sizer')
    try {
      await c.until((m) => m.event === 'snapshot')
      const resize = (cols: number, rows: number) =>
        http.json('POST', `${T('ctl')}/resize`, { json: { cols, rows }, headers: { 'termkeep-attachment': 'sizer' } })
      const [first, second] = await Promise.all([resize(100, 30), resize(80, 24)])
      expect([first.body.cols, first.body.rows]).toEqual([100, 30])
      expect([second.body.cols, second.body.rows]).toEqual([80, 24])
      const { body } = await http.json('GET', T('ctl'))
      expect([body.cols, body.rows]).toEqual([80, 24])
      const page = await http.json('GET', `${T('ctl')}/output?after=0&limit=256`)
      expect(
        page.body.items
          .filter((i: any) => i.kind === 'resize')
          .slice(-2)
          .map((i: any) => [i.cols, i.rows]),
      ).toEqual([
        [100, 30],
        [80, 24],
      ])
    } finally {
      c.close()
    }
  })

  it('refuses bad input without changing anything', async () => {
    const ctl = await follow('ctl', 'third')
    await ctl.until((m) => m.event === 'snapshot')
    const before = await http.json('GET', `${T('ctl')}/output?after=0&limit=256`)
    const big = await input('ctl', 'third', new Uint8Array(MAX_INPUT_BYTES + 1).fill(0x61))
    expect(big.status).toBe(413)
    expect((await big.json()).error.code).toBe('terminal/input-too-large')
    // Without a declared length (chunked), the body is counted while read and refused the same.
    const chunks = [new Uint8Array(MAX_INPUT_BYTES).fill(0x62), new Uint8Array(16).fill(0x62)]
    const chunked = await fetch(`${sidecar.url}${T('ctl')}/input`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sidecar.secret}`, 'termkeep-attachment': 'third' },
      body: new ReadableStream({ pull: (c) => (chunks.length > 0 ? c.enqueue(chunks.shift()!) : c.close()) }),
      duplex: 'half',
    } as RequestInit)
    expect(chunked.status).toBe(413)
    expect((await chunked.json()).error.code).toBe('terminal/input-too-large')
    for (const geometry of [
      { cols: 1, rows: 10 },
      { cols: 10, rows: 0 },
      { cols: 1024, rows: 65 },
      { cols: '80', rows: 24 },
    ]) {
      const r = await http.json('POST', `${T('ctl')}/resize`, { json: geometry, headers: { 'termkeep-attachment': 'third' } })
      expect([r.status, r.body.error.code]).toEqual([400, 'terminal/invalid-geometry'])
    }
    const bad = await http.json('POST', `${T('ctl')}/input`, { body: 'x', headers: { 'termkeep-attachment': 'no good!' } })
    expect([bad.status, bad.body.error.code]).toEqual([400, 'request/invalid'])
    for (const [query, code] of [
      ['after=-1', 'output/invalid-cursor'],
      ['after=x', 'output/invalid-cursor'],
      ['after=999999', 'output/invalid-cursor'],
      ['limit=0', 'request/invalid'],
      ['limit=100000', 'request/invalid'],
    ]) {
      const r = await http.json('GET', `${T('ctl')}/output?${query}`)
      expect([query, r.status, r.body.error.code]).toEqual([query, 400, code])
    }
    const after = await http.json('GET', `${T('ctl')}/output?after=0&limit=256`)
    expect(after.body).toEqual(before.body)
    expect((await http.json('GET', T('ctl'))).body).toMatchObject({ cols: 80, rows: 24 })
    // A valid resize then lands, journaled as a Resize record.
    const ok = await http.json('POST', `${T('ctl')}/resize`, { json: { cols: 100, rows: 30 }, headers: { 'termkeep-attachment': 'third' } })
    expect([ok.status, ok.body.cols, ok.body.rows]).toEqual([200, 100, 30])
    const page = await http.json('GET', `${T('ctl')}/output?after=${before.body.next}`)
    expect(page.body.items).toEqual([{ kind: 'resize', sequence: before.body.next + 1, cols: 100, rows: 30 }])
    const state = await ctl.until((m) => m.event === 'state' && m.data.info.cols === 100)
    expect(state.id).toBe(String(before.body.next + 1))
  })

  it('resumes a follow from Last-Event-ID without a snapshot', async () => {
    const { body } = await http.json('GET', `${T('ctl')}/output?after=0&limit=256`)
    const stream = await follow('ctl', 'resumer', { 'last-event-id': '1' })
    const first = await stream.next()
    expect(first?.event).toBe('state')
    const output = await stream.until((m) => m.event === 'output')
    expect(Number(output.id)).toBeGreaterThan(1)
    expect(body.items.length).toBeGreaterThan(0)
  })

  it('renames (trimmed) and refuses blank or overlong titles', async () => {
    const r = await http.json('PATCH', T('ctl'), { json: { title: '  build  ' } })
    expect([r.status, r.body.title]).toEqual([200, 'build'])
    for (const title of ['', '   ', 'x'.repeat(121)]) {
      const bad = await http.json('PATCH', T('ctl'), { json: { title } })
      expect([bad.status, bad.body.error.code]).toEqual([400, 'request/invalid'])
    }
    expect((await http.json('GET', T('ctl'))).body.title).toBe('build')
  })
})

describe('close', () => {
  it("empties the journal it closes: a hard link made to the keeper's spool keeps no byte of the output", async () => {
    await http.json('PUT', T('linked'), { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
    await waitFor(async () => (await outputText('linked')).includes('ready'), 10_000, 'the echoer')
    const spool = readdirSync(keeperPaths(sidecar.dataDir).journals, { recursive: true, encoding: 'utf8' })
      .map((name) => join(keeperPaths(sidecar.dataDir).journals, name))
      .find((path) => path.endsWith(join(SID, 'linked.journal')))
    expect(spool).toBeDefined()
    const link = join(work, 'link-of-a-journal')
    linkSync(spool!, link)
    expect(readFileSync(link, 'utf8')).toContain('ready')
    expect((await http.json('DELETE', T('linked'))).status).toBe(200)
    await waitFor(async () => !existsSync(spool!), 10_000, 'the spool removed')
    // Emptied once the last of the sidecar's readers lets go (a moment after the close answers).
    await waitFor(async () => readFileSync(link).length === 0, 10_000, 'the linked journal emptied')
  })

  it('kills every process of the terminal, even ones that ignore SIGHUP, drains readers, and is repeatable', async () => {
    await http.json('PUT', T('victim'), { json: { cols: 80, rows: 24, shell: '/bin/bash' } })
    const ctl = await follow('victim', 'v')
    await ctl.until((m) => m.event === 'snapshot')
    const bg = join(work, 'bg.pid')
    const fg = join(work, 'fg.pid')
    await input('victim', 'v', `sh -c 'trap "" HUP; echo $$ > ${bg}; exec sleep 1000' &\n`)
    await input('victim', 'v', `sh -c 'trap "" HUP; echo $$ > ${fg}; exec sleep 1000'\n`)
    const written = (f: string) => existsSync(f) && readFileSync(f, 'utf8').trim().length > 0
    await waitFor(async () => written(bg) && written(fg), 10_000, 'pid files')
    const pids = [bg, fg].map((f) => Number(readFileSync(f, 'utf8').trim()))
    expect(pids.every((pid) => !gone(pid))).toBe(true)
    const watcher = await http.sse(`${T('victim')}/output/watch?after=0`)
    streams.push(watcher)

    const closes = await Promise.all([http.json('DELETE', T('victim')), http.json('DELETE', T('victim'))])
    for (const c of closes) expect([c.status, c.body.closed, c.body.info.state]).toEqual([200, true, 'retired'])
    expect(pids.filter((pid) => !gone(pid))).toEqual([])

    // The attached reader drains to the end; the follower ends after the final state.
    const closed = await watcher.until((m) => m.event === 'closed')
    expect(Number(closed.data.sequence)).toBeGreaterThan(0)
    expect(await watcher.next()).toBeUndefined()
    const seen: string[] = []
    for (let m = await ctl.next(); m; m = await ctl.next()) seen.push(m.event)
    expect(seen.at(-1)).toBe('state')

    // Retired: new attachments get 410, the id can never be created again, close stays repeatable.
    for (const path of [
      `${T('victim')}/output`,
      `${T('victim')}/output/watch`,
      `${T('victim')}/follow?attachment=z`,
      `${T('victim')}/retain`,
    ]) {
      const r = await http.json('GET', path)
      expect([path, r.status, r.body.error.code]).toEqual([path, 410, 'terminal/unavailable'])
    }
    const recreate = await http.json('PUT', T('victim'), { json: { cols: 80, rows: 24 } })
    expect([recreate.status, recreate.body.error.code]).toEqual([409, 'terminal/closed'])
    const again = await http.json('DELETE', T('victim'))
    expect([again.status, again.body.info.state]).toEqual([200, 'retired'])
    expect((await http.json('GET', T('victim'))).body.state).toBe('retired')
  })

  it("kills what an exited shell left behind (a trap '' HUP loop and its children), proven by the terminal's marks", async () => {
    await http.json('PUT', T('leaver'), { json: { cols: 80, rows: 24, shell: shells.path('leaver') } })
    await waitFor(async () => (await http.json('GET', T('leaver'))).body.state === 'exited', 10_000, 'the shell to exit')
    const file = join(work, 'leaver.pid')
    await waitFor(async () => existsSync(file) && readFileSync(file, 'utf8').trim().length > 0, 10_000, 'the loop pid')
    const loop = Number(readFileSync(file, 'utf8').trim())
    const children = () =>
      allProcesses()
        .filter((p) => p.ppid === loop)
        .map((p) => p.pid)
    await waitFor(async () => !gone(loop) && children().length > 0, 10_000, "the loop's sleep")
    const pids = [loop, ...children()]

    const closed = await http.json('DELETE', T('leaver'))
    expect([closed.status, closed.body.info.state]).toEqual([200, 'retired'])
    expect(pids.filter((pid) => !gone(pid))).toEqual([])
  })

  it('kills every process of shells closed right after their create returned', async () => {
    const marked = (tid: string) =>
      allProcesses().filter((p) => {
        try {
          return readFileSync(`/proc/${p.pid}/environ`, 'latin1').split('\0').includes(`TERMKEEP_TERMINAL_ID=${tid}`)
        } catch {
          return false // gone
        }
      })
    const tids = Array.from({ length: 8 }, (_, i) => `snap-${i}`)
    await Promise.all(
      tids.map(async (tid) => {
        await http.json('PUT', T(tid), { json: { cols: 80, rows: 24, shell: shells.path('sleeper') } })
        const closed = await http.json('DELETE', T(tid))
        expect([closed.status, closed.body.info.state]).toEqual([200, 'retired'])
      }),
    )
    expect(tids.flatMap((tid) => marked(tid).map((p) => `${tid}:${p.pid}`))).toEqual([])
  })

  it('ends a retain hold when the terminal closes', async () => {
    await http.json('PUT', T('held'), { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
    const hold = await http.sse(`${T('held')}/retain`)
    streams.push(hold)
    expect((await hold.next())?.event).toBe('retained')
    await http.json('DELETE', T('held'))
    expect(await hold.next()).toBeUndefined()
  })

  it('records a process that exits on its own as exited, with its code, and keeps its output readable', async () => {
    await http.json('PUT', T('quits'), { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
    const ctl = await follow('quits', 'q')
    await ctl.until((m) => m.event === 'snapshot')
    await waitFor(async () => (await outputText('quits')).includes('ready'), 10_000, 'ready')
    await input('quits', 'q', 'q\n')
    const exited = await ctl.until((m) => m.event === 'state' && m.data.info.state === 'exited')
    expect(exited.data.info.exitCode).toBe(3)
    const page = await http.json('GET', `${T('quits')}/output?after=0&limit=256`)
    expect(page.body.end).toBe('closed')
    const refused = await input('quits', 'q', 'x')
    expect((await refused.json()).error).toMatchObject({ code: 'terminal/control-unavailable', reason: 'not-running' })
  })
})

describe('restart', () => {
  it('adopts the terminals of a sidecar killed with -9: the program runs on, its output and input continue, a retried batch is typed once', async () => {
    await http.json('PUT', T('survivor'), { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
    await waitFor(async () => (await outputText('survivor')).includes('ready'), 10_000, 'ready')
    const before = await follow('survivor', 'a')
    const keyed = (text: string, key: string) =>
      http.fetch('POST', `${T('survivor')}/input`, { body: text, headers: { 'termkeep-attachment': 'a', 'idempotency-key': key } })
    expect((await keyed('one\n', 'key-one')).status).toBe(204)
    const seen = await before.until((m) => m.event === 'output' && Buffer.from(m.data.data, 'base64').toString().includes('got:one'))
    const old = sidecar
    await old.kill() // a crash: nothing was cleaned up, and the keeper holds the shell on
    sidecar = await startSidecar({ dataDir: old.dataDir, env: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
    http = new SidecarHttp(sidecar)
    expect(sidecar.generation).toBeGreaterThan(old.generation)
    expect(sidecar.output()).toMatch(/adopted \d+ terminal\(s\) from the keeper/)
    const info = await http.json('GET', T('survivor'))
    expect([info.status, info.body.state, info.body.hostGeneration]).toEqual([200, 'running', sidecar.generation])
    // The client reconnects: a follow resuming from the last event it saw gets exactly what came
    // after it; its retry of a batch whose answer it never saw is not typed again …
    const resumed = await http.sse(`${T('survivor')}/follow?attachment=a`, { 'last-event-id': String(seen.id) })
    streams.push(resumed)
    expect((await keyed('one\n', 'key-one')).status).toBe(204)
    expect((await keyed('two\n', 'key-two')).status).toBe(204)
    const after = await resumed.until((m) => m.event === 'output' && Buffer.from(m.data.data, 'base64').toString().includes('got:two'))
    expect(Number(after.id)).toBeGreaterThan(Number(seen.id))
    // … and the journal holds every byte, before and after the restart, once.
    expect(await outputText('survivor')).toBe('ready\r\ngot:one\r\ngot:two\r\n')
  })

  it('retires the terminals of a keeper that ended: new readers get 410, the id stays closed', async () => {
    await waitFor(async () => (await outputText('survivor')).includes('got:two'), 10_000, 'the survivor')
    const old = sidecar
    await old.kill()
    process.kill(old.keeperPid()!, 'SIGKILL') // the keeper too: the terminals' programs are gone
    sidecar = await startSidecar({ dataDir: old.dataDir, env: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
    http = new SidecarHttp(sidecar)
    const info = await http.json('GET', T('survivor'))
    expect([info.status, info.body.state]).toEqual([200, 'retired'])
    for (const path of [`${T('survivor')}/output?after=0`, `${T('survivor')}/output/watch`, `${T('survivor')}/follow?attachment=a`]) {
      const r = await http.json('GET', path)
      expect([path, r.status, r.body.error.code]).toEqual([path, 410, 'terminal/unavailable'])
    }
    const input410 = await http.json('POST', `${T('survivor')}/input`, { body: 'x', headers: { 'termkeep-attachment': 'a' } })
    expect(input410.status).toBe(410)
    const recreate = await http.json('PUT', T('survivor'), { json: { cols: 80, rows: 24 } })
    expect([recreate.status, recreate.body.error.code]).toEqual([409, 'terminal/closed'])
    const list = await http.json('GET', `/v1/sessions/${SID}/terminals`)
    expect(list.body.terminals.every((t: { state: string }) => t.state === 'retired')).toBe(true)
  })
})

describe('idle reclamation', () => {
  it('closes an idle terminal nobody holds, and keeps one that a retain stream holds', async () => {
    const own = await startSidecar({ env: { TERMKEEP_SHELLS_FILE: shells.shellsFile, TERMKEEP_TERMINAL_IDLE_MS: '2000' } })
    const ownHttp = new SidecarHttp(own)
    const P = (tid: string) => `/v1/sessions/${SID}/terminals/${tid}`
    try {
      await insertSession(own.databaseUrl, SID, work)
      await ownHttp.json('PUT', P('idle'), { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
      // `held` ticks until its retain stream is open, so however slow this process is, the sweep
      // cannot reclaim it in between.
      await ownHttp.json('PUT', P('held'), { json: { cols: 80, rows: 24, shell: shells.path('ticker') } })
      const hold = await ownHttp.sse(`${P('held')}/retain`)
      streams.push(hold)
      expect((await hold.next())?.event).toBe('retained')
      writeFileSync(join(work, 'held.go'), '')
      await waitFor(async () => (await ownHttp.json('GET', P('idle'))).body.state === 'retired', 15_000, 'idle terminal reclaimed')
      expect((await ownHttp.json('GET', P('held'))).body.state).toBe('running')
      hold.close()
      await waitFor(async () => (await ownHttp.json('GET', P('held'))).body.state === 'retired', 15_000, 'released terminal reclaimed')
    } finally {
      await own.stop()
    }
  })
})

describe('shutdown', () => {
  it('writes what the database refused before when the sidecar stops, and leaves the terminal to the next one', async () => {
    const own = await startSidecar({ env: { TERMKEEP_SHELLS_FILE: shells.shellsFile, TERMKEEP_DB_BUSY_TIMEOUT_MS: '100' } })
    const ownHttp = new SidecarHttp(own)
    const P = `/v1/sessions/${SID}/terminals/quits-locked`
    const storage = await openStorage({ url: own.databaseUrl })
    let next: RunningSidecar | undefined
    try {
      await insertSession(own.databaseUrl, SID, work)
      await ownHttp.json('PUT', P, { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
      const ctl = await ownHttp.sse(`${P}/follow?attachment=z`)
      streams.push(ctl)
      await ctl.until((m) => m.event === 'snapshot')
      const lock = await storage.client.transaction('write')
      try {
        await lock.execute("UPDATE sessions SET cwd = cwd WHERE id = 'nobody'")
        await ownHttp.fetch('POST', `${P}/input`, { body: 'q\n', headers: { 'termkeep-attachment': 'z' } })
        await ctl.until((m) => m.event === 'state' && m.data.info.state === 'exited')
        // Past the first retry (1 s), so the next one is 2 s away when the sidecar stops.
        await new Promise((r) => setTimeout(r, 1_500))
      } finally {
        await lock.rollback()
      }
      await own.stop({ terminals: 'keep' })
      expect(own.output()).toContain('termkeep sidecar: 0 terminal(s) keep running in the keeper')
      const reader = await openStorage({ url: own.databaseUrl })
      try {
        const { rows } = await reader.client.execute("SELECT state, exit_code FROM terminals WHERE id = 'quits-locked'")
        expect(rows[0]).toMatchObject({ state: 'exited', exit_code: 3 })
      } finally {
        reader.close()
      }
      // The keeper still holds it (exited, its output intact): the next sidecar adopts it as it is.
      next = await startSidecar({ dataDir: own.dataDir, env: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
      const adopted = await new SidecarHttp(next).json('GET', P)
      expect([adopted.body.state, adopted.body.exitCode]).toEqual(['exited', 3])
    } finally {
      storage.close()
      await next?.stop()
      await own.stop()
    }
  })
})
