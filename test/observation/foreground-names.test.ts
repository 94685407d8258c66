/**
 * One rule for a terminal's foreground program (sidecar/observation/foreground.ts), checked
 * against real tmux 3.x (`#{pane_current_command}`, the reference people know): the same command
 * lines typed into a tmux pane and a termkeep terminal, each running bash. The terminal's info
 * (`foregroundCommand`) and the observation context (`foreground.executableName`) always agree
 * with each other; they agree with tmux except where docs/observation.md says they differ on
 * purpose — a pipeline whose group leader ended, a relative argv[0].
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { waitFor } from '../support/ports.ts'
import { Observation } from './support.ts'

const TMUX = (() => {
  try {
    return execFileSync('tmux', ['-V'], { encoding: 'utf8' }).trim()
  } catch {
    return undefined
  }
})()
if (!TMUX) console.warn('foreground-names: tmux is not installed here; the comparison with tmux is SKIPPED')

let o: Observation
let observer: string
let dir: string
const socket = `termkeep-audit-${process.pid}`
const tmux = (...args: string[]) =>
  execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8', env: { ...process.env, TMUX_TMPDIR: dir } })

/** What each of the three says now: tmux, the terminal's info, the observation context. */
async function names(): Promise<{ tmux: string; info: string; observed: string }> {
  const info = await o.call('GET', o.terminalPath('t1'))
  const context = await o.context('t1', observer)
  return {
    tmux: tmux('display', '-p', '-t', 'a', '#{pane_current_command}').trim(),
    info: info.body.foregroundCommand,
    observed: context.body.foreground?.executableName,
  }
}

/** Types `line` into both, then waits until all three name what was expected. */
async function both(line: string, expected: { tmux: string; termkeep: string }): Promise<void> {
  tmux('send-keys', '-t', 'a', line, 'Enter')
  await o.type('t1', `${line}\r`)
  const want = { tmux: expected.tmux, info: expected.termkeep, observed: expected.termkeep }
  let last: Awaited<ReturnType<typeof names>> | undefined
  await waitFor(async () => JSON.stringify((last = await names())) === JSON.stringify(want), 10_000).catch(() => {
    throw new Error(`${line}: expected ${JSON.stringify(want)}, got ${JSON.stringify(last)}`)
  })
}

/** Ctrl-C in both, and back at the prompt. */
async function interrupt(): Promise<void> {
  tmux('send-keys', '-t', 'a', 'C-c')
  await o.type('t1', '\x03')
  await waitFor(async () => Object.values(await names()).every((name) => name === 'bash'), 10_000, 'bash at the prompt')
}

describe.skipIf(!TMUX)(`foreground names against ${TMUX ?? 'tmux'}`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'termkeep-tmux-'))
    copyFileSync('/bin/sleep', join(dir, 'mysleep'))
    o = await Observation.start('foreground-names')
    observer = await o.observer(['observe:process'])
    await o.terminal('t1')
    await o.type('t1', `cd ${dir}\r`)
    tmux('-f', '/dev/null', 'new-session', '-d', '-s', 'a', '-x', '80', '-y', '24', '-c', dir, 'bash --norc --noprofile')
    await waitFor(async () => Object.values(await names()).every((name) => name === 'bash'), 10_000, 'bash in both')
  }, 90_000)

  afterAll(async () => {
    try {
      tmux('kill-server')
    } catch {
      // already gone
    }
    await o?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it.each([
    ['sleep 300', 'sleep'],
    ['sleep 300 | cat', 'sleep'],
    ['(sleep 300)', 'sleep'],
    [`${'/'}bin/sleep 300`, 'sleep'],
  ])('agrees with tmux on `%s`: %s', async (line, name) => {
    await both(line, { tmux: name, termkeep: name })
    await interrupt()
  })

  it('names a pipeline whose leader ended by the member still running, where tmux falls back to the shell', async () => {
    await both('true | sleep 300', { tmux: 'bash', termkeep: 'sleep' })
    await interrupt()
  })

  it('names a program by its whole argv[0] when it has more arguments, where tmux cuts argv[0] at its first space', async () => {
    await both('(exec -a "my prog" sleep 300)', { tmux: 'my', termkeep: 'my prog' })
    await interrupt()
  })

  it('names a program run by a relative path by its last segment, where tmux shows the path as typed', async () => {
    await both('./mysleep 300', { tmux: './mysleep', termkeep: 'mysleep' })
    await interrupt()
  })
})
