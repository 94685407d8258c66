/**
 * No lost and no doubled keystrokes when the sidecar stalls (docs/retrying.md): `termkeep attach`
 * (in a real PTY) and `termkeep send` type through a proxy that stops the real sidecar (SIGSTOP)
 * as their input request passes and resumes it (SIGCONT) once the API answered 503. The stalled
 * sidecar types the batch as it resumes; the client, told 503, retries it under the same
 * Idempotency-Key; the command runs exactly once. "Ran" is counted in the terminal's journal as
 * the command's output (its echo shows the unexpanded `$((…))`, so only a run prints the marker).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PtyProcess } from '../../keeper/pty/pty-process.ts'
import { TermkeepClient } from '../../web/client/api.ts'
import { journalText, startStack, type Stack } from '../browser/stack.ts'
import { waitFor } from '../support/ports.ts'
import { startStallProxy, type StallProxy } from '../support/stall-proxy.ts'
import { exitedWithin, killPtys, runCli, runInPty } from './run.ts'

let stack: Stack
let proxy: StallProxy
let client: TermkeepClient
let sessionId: string
const running: PtyProcess[] = []

beforeAll(async () => {
  stack = await startStack('cli-retry')
  proxy = await startStallProxy(stack.api.url, () => stack.sidecar.pid)
  client = new TermkeepClient({ url: stack.api.url, token: stack.token })
  await client.createWorkspace(stack.workspaceDir)
  sessionId = (await client.createSession(stack.workspaceDir)).id
})
afterAll(async () => {
  killPtys(running)
  await proxy?.close()
  await stack?.stop()
})

const env = () => ({ TERMKEEP_URL: proxy.url, TERMKEEP_TOKEN: stack.token })
const isInput = (request: { method?: string; url?: string }) => request.method === 'POST' && request.url!.endsWith('/input')
const count = (text: string, marker: string) => text.split(marker).length - 1

/** The input requests of one batch: its first attempt was the stalled one, then its retries. */
function attemptsOf(key: string | undefined) {
  return proxy.passed.filter((p) => p.method === 'POST' && p.path.endsWith('/input') && p.key === key)
}

describe('input through a stalled sidecar', () => {
  it('termkeep attach retries the batch the stalled sidecar typed, and it runs once', async () => {
    const tid = 'retry-attach'
    await client.createTerminal(sessionId, tid, { cols: 80, rows: 24 })
    const cli = runInPty(['attach', sessionId, tid], env(), 100, 30)
    running.push(cli.pty)
    await waitFor(
      async () => {
        const info = await client.terminal(sessionId, tid)
        return info.cols === 100 && info.rows === 30
      },
      30_000,
      'attach to take control',
    )
    proxy.stallNext(isInput)
    cli.write('echo once-$((6*7))\r')
    const stalled = await proxy.stalled()
    expect(stalled.status).toBe(503)
    expect(stalled.key).toMatch(/^[\x21-\x7e]{1,128}$/)
    await waitFor(async () => cli.output().includes('once-42'), 30_000, 'the command to run')
    // The retry under the same key was answered 204 (typed already) and nothing typed it again.
    await waitFor(async () => attemptsOf(stalled.key).some((p) => p.status === 204), 10_000, 'the retry to be answered')
    cli.write('echo after-$((1+1))\r')
    await waitFor(async () => cli.output().includes('after-2'), 20_000, 'the next command')
    expect(count(await journalText(stack, sessionId, tid), 'once-42')).toBe(1)
    const statuses = attemptsOf(stalled.key).map((p) => p.status)
    expect([statuses[0], statuses.at(-1)]).toEqual([503, 204])
    cli.write('\x1c')
    expect(await exitedWithin(cli.exited, 20_000, 'attach after Ctrl-\\')).toBe(0)
    expect(cli.output()).not.toContain('may not have arrived')
  })

  it('termkeep send retries the same way, and the keys are typed once', async () => {
    const tid = 'retry-send'
    await client.createTerminal(sessionId, tid, { cols: 80, rows: 24 })
    proxy.stallNext(isInput)
    const sent = await runCli(['send', sessionId, tid, 'echo sent-$((5*5))', '--key', 'Enter'], env())
    expect(sent.code, sent.stderr).toBe(0)
    const stalled = await proxy.stalled()
    expect(stalled.status).toBe(503)
    expect(attemptsOf(stalled.key).at(-1)?.status).toBe(204)
    // Input is ordered: once a later command ran, everything sent before it did.
    const next = await runCli(['send', sessionId, tid, 'echo next-$((2+2))', '--key', 'Enter'], env())
    expect(next.code, next.stderr).toBe(0)
    const typed = await waitFor(
      async () => {
        const journal = await journalText(stack, sessionId, tid)
        return journal.includes('next-4') ? journal : undefined
      },
      20_000,
      'the later command to run',
    )
    expect(count(typed, 'sent-25')).toBe(1)
  })
})
