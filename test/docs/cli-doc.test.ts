/**
 * docs/cli.md stays true: its copy of `termkeep --help` is the CLI's, every command in that list
 * has an example, and every command line in its sh blocks runs as written against a real stack,
 * in order, with `termkeep` on PATH as `npm link` puts it there. Only the example ids are replaced
 * by real ones (ses_a1, t-Qm3x, ws_…, tok_…, the sequence 1234) and `~` is a scratch HOME holding
 * `project/`. Lines run in a PTY, as a person's shell runs them; lines that attach detach with
 * Ctrl-\, lines that keep running (--watch, --follow, serve) are stopped with Ctrl-C once they
 * printed. Not run: npm (start, link: covered by test/docs/start-lines.test.ts and
 * test/cli/native-build.test.ts), `export NAME=…` (the test sets the environment itself), and
 * asciinema play (it plays in real time, for a person).
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createToken } from '../../storage/tokens.ts'
import { ROOT } from '../../cli/self.ts'
import { PtyProcess } from '../../keeper/pty/pty-process.ts'
import { TermkeepClient } from '../../web/client/api.ts'
import { startStack, type Stack } from '../browser/stack.ts'
import { UNSET_CONFIG } from '../smoke/targets.ts'
import { stopKeeper, watchKeeper } from '../support/keepers.ts'
import { freePort, waitFor } from '../support/ports.ts'
import { commandLines, helpBlock } from './docs-check.ts'

const DOC = readFileSync(join(ROOT, 'docs/cli.md'), 'utf8')
const LINES = commandLines(DOC)

/** Lines a test of its own covers, or that only make sense with a person watching. */
const NOT_RUN = /^(npm |export |asciinema play )/
/** Lines that attach this terminal to a remote one. */
const ATTACHES = /^termkeep (attach |new(?!.*--detached))/
/** Lines that run until stopped. */
const KEEPS_RUNNING = /--watch|--follow|^termkeep serve/

interface Outcome {
  code: number | string | null
  output: string
}

describe('docs/cli.md', () => {
  let stack: Stack
  let env: Record<string, string>
  let scratch: string
  let work: string
  let ids: Record<string, string>

  /** A line with the example ids replaced by real ones. */
  const real = (line: string) => Object.entries(ids).reduce((text, [example, id]) => text.split(example).join(id), line)
  const shellEnv = (line: string): Record<string, string> => {
    // stop works on the data directory of the serve line above it (and its keeper).
    if (line.startsWith('termkeep stop')) return { ...env, TERMKEEP_DATA_DIR: join(scratch, 'serve-data') }
    if (!line.startsWith('termkeep serve')) return env
    // A server of its own for `serve`; `--api-only` serves the stack's sidecar and database.
    return line.includes('--api-only')
      ? { ...env, SIDECAR_URL: stack.sidecar.url, SIDECAR_SECRET: stack.sidecar.secret }
      : { ...env, ...UNSET_CONFIG, HOME: env.HOME, PATH: env.PATH, TERMKEEP_DATA_DIR: join(scratch, 'serve-data') }
  }

  beforeAll(async () => {
    stack = await startStack('cli-doc')
    scratch = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-cli-doc-')))
    // The serve line's sidecar starts a keeper, which outlives it: stopped after the file.
    watchKeeper(join(scratch, 'serve-data'))
    const home = join(scratch, 'home')
    work = join(scratch, 'work')
    mkdirSync(join(home, 'project'), { recursive: true })
    mkdirSync(work)
    // What `npm link` makes: `termkeep` on PATH, leading to this installation's cli/bin.js.
    const bin = join(scratch, 'bin')
    mkdirSync(bin)
    symlinkSync(join(ROOT, 'cli', 'bin.js'), join(bin, 'termkeep'))
    env = {
      HOME: home,
      PATH: `${bin}:${process.env.PATH}`,
      TERMKEEP_URL: stack.api.url,
      TERMKEEP_TOKEN: stack.token,
      // token create writes the server's database directly, as where npm start runs.
      DATABASE_URL: stack.sidecar.databaseUrl,
      PORT: String(await freePort()),
      SIDECAR_URL: `http://127.0.0.1:${await freePort()}`,
      INIT_CWD: '',
    }
    const client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    const { workspace } = await client.createWorkspace(join(home, 'project'))
    const session = await client.createSession(join(home, 'project'))
    await client.createTerminal(session.id, 't-live', { cols: 80, rows: 24 })
    const { token } = await createToken(stack.storage.db, { name: 'to-revoke', grants: ['workspaces:read'], sessions: 'all' })
    // `--after 1234`: a native sequence the terminal has (a fresh one has fewer records).
    ids = {
      ses_a1: session.id,
      ses_abc: session.id,
      't-Qm3x': 't-live',
      'ws_…': workspace.id,
      'tok_…': token.id,
      '--after 1234': '--after 1',
    }
  })
  afterAll(async () => {
    await stack?.stop()
    if (scratch) await stopKeeper(join(scratch, 'serve-data'))
    if (scratch) rmSync(scratch, { recursive: true, force: true })
  })

  it("keeps a copy of termkeep --help equal to the CLI's", async () => {
    const usage = await run(process.execPath, [join(ROOT, 'cli/bin.js'), '--help'])
    expect(usage.code).toBe(0)
    expect(helpBlock(DOC)).toBe(usage.output)
  })

  it('shows an example of every command the CLI lists', () => {
    const commands = [...helpBlock(DOC).matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1]!)
    expect(commands).toEqual(expect.arrayContaining(['serve', 'token', 'ls', 'send', 'run', 'ps']))
    const examples = new Set(LINES.flatMap((line) => /^termkeep ([a-z]+)/.exec(line)?.[1] ?? []))
    expect(commands.filter((command) => !examples.has(command))).toEqual([])
    expect([...examples].filter((command) => !commands.includes(command))).toEqual([])
  })

  // About 50 lines, each a CLI process (some a server): about a minute on a quiet machine.
  it('runs every command line as written, in order', { timeout: 600_000 }, async () => {
    const ran: string[] = []
    for (const line of LINES) {
      if (NOT_RUN.test(line)) continue
      const command = real(line)
      const lineEnv = shellEnv(line)
      const started = Date.now()
      const outcome = ATTACHES.test(line)
        ? await attached(command, lineEnv, work)
        : KEEPS_RUNNING.test(line)
          ? await untilPrinted(command, lineEnv, work)
          : await toTheEnd(command, lineEnv, work)
      expect(outcome.code, `${line}\n${outcome.output}`).toBe(0)
      ran.push(line)
      if (Date.now() - started > 5_000) console.log(`${Date.now() - started} ms: ${line}`)
    }
    // The examples the issue names among them, and every kind of line.
    expect(ran).toContain('termkeep send ses_a1 t-Qm3x git commit -m wip --key Enter')
    for (const pattern of [ATTACHES, KEEPS_RUNNING, /^curl /, /^asciinema cat /, /^cat > script\.js/, /^termkeep run /, /^termkeep ps /]) {
      expect(
        ran.some((line) => pattern.test(line)),
        String(pattern),
      ).toBe(true)
    }
  })
})

function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env, cwd = ROOT): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (error.code ?? error.signal ?? 1) : 0, output: stdout + stderr }),
    )
  })
}

/** Runs a line in a real PTY, as a person's shell does; the PTY's output and its exit. */
function inPty(line: string, env: Record<string, string>, cwd: string) {
  const pty = new PtyProcess({
    file: '/bin/sh',
    args: ['-c', line],
    cwd,
    env: { ...process.env, ...env, TERM: 'xterm-256color' } as Record<string, string>,
    cols: 100,
    rows: 30,
  })
  let output = ''
  const decoder = new TextDecoder()
  pty.onData((data) => (output += decoder.decode(data, { stream: true })))
  const exit = new Promise<number>((resolve) => pty.onExit(({ exitCode }) => resolve(exitCode ?? -1)))
  return {
    output: () => output,
    write: (text: string) => pty.write(Buffer.from(text)),
    /** The exit code, or `timeout` when it has not exited within `ms`. */
    exited: (ms = 30_000) => Promise.race([exit, new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), ms))]),
    kill: () => {
      try {
        process.kill(-pty.pid, 'SIGKILL')
      } catch {} // ended already
    },
  }
}

/**
 * A line that keeps running, in a PTY (a pipe would change what it does: `jq` buffers into one),
 * until it printed, then Ctrl-C. Passes when it printed and then stopped.
 */
async function untilPrinted(line: string, env: Record<string, string>, cwd: string): Promise<Outcome> {
  const run = inPty(line, env, cwd)
  try {
    // serve prints where it listens; everything else prints what was asked for.
    const done = line.startsWith('termkeep serve') ? () => run.output().includes('API listening') : () => run.output().trim() !== ''
    const printed = await waitFor(async () => done(), 60_000, line).then(
      () => true,
      () => false,
    )
    run.write('\x03')
    const code = await run.exited()
    return { code: printed && code !== 'timeout' ? 0 : `printed: ${printed}, exit: ${code}`, output: run.output() }
  } finally {
    run.kill()
  }
}

/** A line that ends by itself, in a PTY as a person's shell runs it (`asciinema cat` needs one). */
async function toTheEnd(line: string, env: Record<string, string>, cwd: string): Promise<Outcome> {
  const run = inPty(line, env, cwd)
  try {
    return { code: await run.exited(60_000), output: run.output() }
  } finally {
    run.kill()
  }
}

/** A line that attaches: in a real PTY, until it drew the remote screen, then Ctrl-\\ detaches. */
async function attached(line: string, env: Record<string, string>, cwd: string): Promise<Outcome> {
  const run = inPty(line, env, cwd)
  try {
    await waitFor(async () => run.output().includes('\x1b[?1049h'), 30_000, `${line} to attach`)
    run.write('\x1c')
    return { code: await run.exited(), output: run.output() }
  } finally {
    run.kill()
  }
}
