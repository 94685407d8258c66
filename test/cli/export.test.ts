/**
 * asciicast export against the real stack, checked with Debian's real `asciinema`: `termkeep export`
 * of a terminal that printed colours, multi-byte characters split across PTY reads (by sleeps, and
 * by the sheer amount of them), and was resized twice, gives a recording whose `asciinema cat`
 * reproduces the journal's bytes exactly, with `r` events for the resizes and the records' own
 * times. Plus an empty terminal (a header alone), a retired one (410) and the refusals.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { self } from '../../cli/self.ts'
import { createToken } from '../../storage/tokens.ts'
import { PtyProcess } from '../../keeper/pty/pty-process.ts'
import { TermkeepClient, terminalPath } from '../../web/client/api.ts'
import { follow } from '../../web/client/follow.ts'
import { journalText, startStack, type Stack } from '../browser/stack.ts'
import { waitFor } from '../support/ports.ts'
import { shellsFixture } from '../support/terminals.ts'
import { runCli } from './run.ts'

/** Colours (16, 256 and RGB), then characters cut in two by a pause between their bytes, then
 * enough multi-byte text that PTY reads and spool windows cut characters everywhere. */
const PAINTER = `printf '\\033[1;31mred\\033[0m \\033[38;5;82mgreen\\033[0m \\033[48;2;10;20;30mrgb-bg\\033[0m\\n'
printf 'caf\\303'; sleep 0.3; printf '\\251 \\342\\234'; sleep 0.3; printf '\\223 \\360\\237'; sleep 0.3; printf '\\230\\200\\n'
i=0; while [ $i -lt 20000 ]; do printf 'ä✓😀 line %d ünïcödé ✓✓ 😀\\n' $i; i=$((i+1)); done
printf 'READY\\n'
exec cat`

/** `asciinema cat FILE` as a user runs it: it needs a controlling terminal (it opens /dev/tty), so
 * it runs in a PTY, its stdout into a file (the exact bytes it writes). */
async function asciinemaCat(cast: string, dir: string): Promise<{ code: number; bytes: Buffer }> {
  const out = join(dir, `cat-${Date.now()}.out`)
  const pty = new PtyProcess({
    file: '/bin/sh',
    args: ['-c', 'exec asciinema cat "$1" > "$2"', 'sh', cast, out],
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LC_ALL: 'C.UTF-8', TERM: 'xterm-256color' },
    cols: 80,
    rows: 24,
  })
  let messages = ''
  pty.onData((data) => (messages += data.toString()))
  const code = await new Promise<number>((resolve) => pty.onExit(({ exitCode }) => resolve(exitCode ?? -1)))
  if (code !== 0) throw new Error(`asciinema cat exited ${code}: ${messages}`)
  return { code, bytes: readFileSync(out) }
}

/** Everything the terminal printed, as bytes (journalText reads the journal pages as latin1). */
const journalBytes = async (stack: Stack, sid: string, tid: string) => Buffer.from(await journalText(stack, sid, tid), 'latin1')

type CastEvent = [number, 'o' | 'r', string]

function parseCast(text: string): { header: Record<string, unknown>; events: CastEvent[] } {
  const lines = text.split('\n')
  expect(lines.pop()).toBe('') // every line ends with \n
  return { header: JSON.parse(lines[0]), events: lines.slice(1).map((line) => JSON.parse(line) as CastEvent) }
}

describe('asciicast export (termkeep export, GET …/output.cast)', () => {
  let stack: Stack
  let client: TermkeepClient
  let env: Record<string, string>
  let sessionId: string
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-cast-'))
  const shells = shellsFixture({ painter: PAINTER, silent: 'exec sleep 100000' })

  beforeAll(async () => {
    execFileSync('asciinema', ['--version']) // Debian's package; .ci/run installs it
    stack = await startStack('export', { sidecarEnv: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
    client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    sessionId = (await client.createSession(stack.workspaceDir)).id
    env = { TERMKEEP_URL: stack.api.url, TERMKEEP_TOKEN: stack.token }
  })
  afterAll(async () => {
    await stack?.stop()
  })

  it("reproduces the journal byte for byte under `asciinema cat`, with resizes and the records' times", async () => {
    await client.createTerminal(sessionId, 'paint', { cols: 80, rows: 24, shell: shells.path('painter') })
    await waitFor(async () => (await journalText(stack, sessionId, 'paint')).includes('READY'), 60_000, 'the painter to finish printing')
    // Resize twice as the controller, with output in between.
    const recorder = new AbortController()
    let controls = false
    const onInfo = (info: { controllerId: string | null }) => void (controls = info.controllerId === 'recorder')
    const following = follow({
      client,
      sessionId,
      terminalId: 'paint',
      attachment: 'recorder',
      signal: recorder.signal,
      handlers: { snapshot: (_s, _screen, info) => onInfo(info), output() {}, state: onInfo },
    })
    await waitFor(async () => controls, 20_000, 'control of the painter')
    await client.resize(sessionId, 'paint', 'recorder', 100, 30)
    await client.input(sessionId, 'paint', 'recorder', new TextEncoder().encode('after ✓ résumé\r'))
    await waitFor(
      async () => (await journalText(stack, sessionId, 'paint')).split(Buffer.from('after ✓').toString('latin1')).length > 2,
      20_000,
      'the echo and cat',
    )
    await client.resize(sessionId, 'paint', 'recorder', 90, 20)
    await client.input(sessionId, 'paint', 'recorder', new TextEncoder().encode('bye\r'))
    await waitFor(async () => (await journalText(stack, sessionId, 'paint')).split('bye').length > 2, 20_000, 'the last line')
    recorder.abort()
    await following

    const file = join(dir, 'paint.cast')
    const toFile = await runCli(['export', sessionId, 'paint', '-o', file], env)
    expect(toFile.code, toFile.stderr).toBe(0)
    expect(existsSync(`${file}.partial`)).toBe(false)
    const toStdout = await runCli(['export', sessionId, 'paint'], env)
    expect(toStdout.code, toStdout.stderr).toBe(0)
    const cast = readFileSync(file)
    expect(toStdout.bytes.equals(cast)).toBe(true)
    const direct = await fetch(`${stack.api.url}${terminalPath(sessionId, 'paint')}/output.cast`, {
      headers: { authorization: `Bearer ${stack.token}` },
    })
    expect(direct.headers.get('content-type')).toBe('application/x-asciicast')
    expect(Buffer.from(await direct.arrayBuffer()).equals(cast)).toBe(true)

    const journal = await journalBytes(stack, sessionId, 'paint')
    expect(journal.length).toBeGreaterThan(800_000) // several spool windows, thousands of records
    const replayed = await asciinemaCat(file, dir)
    expect(replayed.bytes.length).toBe(journal.length)
    expect(replayed.bytes.equals(journal)).toBe(true)

    const { header, events } = parseCast(cast.toString('utf8'))
    expect(header).toMatchObject({ version: 2, width: 80, height: 24, title: 'painter', env: { TERM: 'xterm-256color' } })
    expect(Math.abs(Number(header.timestamp) - Date.now() / 1000)).toBeLessThan(600)
    expect(events.filter((e) => e[1] === 'r').map((e) => e[2])).toEqual(['100x30', '90x20'])
    const times = events.map((e) => e[0])
    expect(times).toEqual([...times].sort((a, b) => a - b))
    // The pauses between a character's bytes are in the times: the event completing "é" came
    // ~0.3 s after the first, and no character came out broken.
    const first = events[0][0]
    const e = events.find((event) => event[1] === 'o' && event[2].includes('é'))!
    expect(e[0] - first).toBeGreaterThanOrEqual(0.25)
    expect(events.some((event) => event[2].includes('\uFFFD'))).toBe(false)
    // Output after a resize comes after its `r` event.
    const resizedAt = events.findIndex((event) => event[2] === '100x30')
    expect(events.findIndex((event) => event[1] === 'o' && event[2].includes('after ✓'))).toBeGreaterThan(resizedAt)
  })

  it('exports a terminal that printed nothing as a header alone, which asciinema accepts', async () => {
    await client.createTerminal(sessionId, 'quiet', { cols: 100, rows: 30, shell: shells.path('silent') })
    const result = await runCli(['export', sessionId, 'quiet'], env)
    expect(result.code, result.stderr).toBe(0)
    const { header, events } = parseCast(result.stdout)
    expect(header).toMatchObject({ version: 2, width: 100, height: 30 })
    expect(events).toEqual([])
    const file = join(dir, 'quiet.cast')
    expect((await runCli(['export', sessionId, 'quiet', '--output', file], env)).code).toBe(0)
    expect((await asciinemaCat(file, dir)).bytes.length).toBe(0)
  })

  it('refuses a retired terminal (410), an unknown one, a token without terminals:output, and bad usage', async () => {
    await client.closeTerminal(sessionId, 'quiet')
    await waitFor(async () => (await client.terminal(sessionId, 'quiet')).state === 'retired', 20_000, 'the terminal to retire')
    const direct = await fetch(`${stack.api.url}${terminalPath(sessionId, 'quiet')}/output.cast`, {
      headers: { authorization: `Bearer ${stack.token}` },
    })
    expect(direct.status).toBe(410)
    expect(((await direct.json()) as any).error.code).toBe('terminal/unavailable')
    const noOutputGrant = (
      await createToken(stack.storage.db, { name: 'display-only', grants: ['terminals:display', 'terminals:control'], sessions: 'all' })
    ).secret
    const file = join(dir, 'never.cast')
    const [retired, unknown, forbidden, usage, help] = await Promise.all([
      runCli(['export', sessionId, 'quiet', '-o', file], env),
      runCli(['export', sessionId, 'no-such-terminal'], env),
      runCli(['export', sessionId, 'paint'], { ...env, TERMKEEP_TOKEN: noOutputGrant }),
      runCli(['export', sessionId], env),
      runCli(['export', '--help'], {}),
    ])
    expect(retired.code).toBe(1)
    expect(retired.stderr).toContain('(terminal/unavailable)')
    expect(existsSync(file) || existsSync(`${file}.partial`)).toBe(false)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('(terminal/not-found)')
    expect(forbidden.code).toBe(1)
    expect(forbidden.stderr).toContain('terminals:output (auth/forbidden)')
    expect(usage.code).toBe(2)
    expect(usage.stderr.trim()).toBe(
      `termkeep: export takes <session> <terminal>, or one session:terminal (\`${self()} export --help\` shows the usage)`,
    )
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^usage: termkeep export <session> <terminal>/)
  })
})
