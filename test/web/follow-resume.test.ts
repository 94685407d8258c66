/**
 * The shared follow client (page and `termkeep attach`) against the real API and sidecar, through
 * a proxy the test cuts: after a network loss it resumes with Last-Event-ID, and exactly the output
 * journaled while it was away is marked as replayed backlog (whose terminal queries must not be
 * answered); output printed after the resume is live, however late the replay arrived. And it rides
 * through a restart of the sidecar (503 meanwhile): the terminal lives on in the keeper.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TermkeepClient } from '../../web/client/api.ts'
import { follow } from '../../web/client/follow.ts'
import { startProxy, type Proxy } from '../browser/proxy.ts'
import { commandEntered, journalText, startStack, type Stack } from '../browser/stack.ts'
import { startSidecar } from '../support/sidecar.ts'
import { waitFor } from '../support/ports.ts'

interface Seen {
  text: string
  backlog: boolean
}

describe('follow resume', () => {
  let stack: Stack
  let proxy: Proxy

  beforeAll(async () => {
    stack = await startStack('follow')
    proxy = await startProxy(stack.api.url)
  })
  afterAll(async () => {
    await stack?.stop()
  })

  it('marks exactly the replayed output as backlog and later output as live', async () => {
    const direct = new TermkeepClient({ url: stack.api.url, token: stack.token })
    await direct.createWorkspace(stack.workspaceDir)
    const session = await direct.createSession(stack.workspaceDir)
    await direct.createTerminal(session.id, 't1', { cols: 80, rows: 24 })
    const seen: Seen[] = []
    const statuses: string[] = []
    const abort = new AbortController()
    const viaProxy = new TermkeepClient({ url: proxy.url, token: stack.token })
    const done = follow({
      client: viaProxy,
      sessionId: session.id,
      terminalId: 't1',
      attachment: 'resume-test',
      signal: abort.signal,
      handlers: {
        snapshot: () => {},
        output: (_sequence, bytes, backlog) => seen.push({ text: Buffer.from(bytes).toString('latin1'), backlog }),
        state: () => {},
        status: (s) => statuses.push(s),
      },
    })
    const send = (line: string) => direct.input(session.id, 't1', 'resume-test', new TextEncoder().encode(line))
    const shown = (needle: string) => seen.filter((s) => s.text.includes(needle))
    try {
      await waitFor(async () => statuses.includes('live'), 20_000, 'the follow to attach')
      // The shell prints only once a gate file exists, created after the cut: however loaded the
      // machine, the output cannot reach the client live.
      const gate = join(stack.workspaceDir, 'away-gate')
      await send(`until [ -e ${gate} ]; do sleep 0.1; done; echo "AWAY-$((6*7))"\r`)
      await waitFor(
        async () => commandEntered(await journalText(stack, session.id, 't1'), 'until [', '"AWAY-$((6*7))"'),
        10_000,
        'the command to be echoed',
      )
      proxy.cut()
      writeFileSync(gate, '')
      await waitFor(async () => (await journalText(stack, session.id, 't1')).includes('AWAY-42'), 20_000, 'output while away')
      expect(shown('AWAY-42')).toEqual([])
      proxy.restore()
      await waitFor(async () => shown('AWAY-42').length > 0, 30_000, 'the replay')
      expect(shown('AWAY-42').every((s) => s.backlog)).toBe(true)

      // Printed after the resume: live, even though it arrives well after the replay started.
      await new Promise((r) => setTimeout(r, 1500))
      await send('echo "NOW-$((5*5))"\r')
      await waitFor(async () => shown('NOW-25').length > 0, 20_000, 'live output after the resume')
      expect(shown('NOW-25').every((s) => !s.backlog)).toBe(true)
      // Nothing was delivered twice.
      expect(
        seen
          .map((s) => s.text)
          .join('')
          .split('AWAY-42').length - 1,
      ).toBe(1)
    } finally {
      abort.abort()
      await done
    }
  })

  it('rides through a sidecar killed and started again: it keeps trying, then resumes with every byte once', async () => {
    const client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    const session = await client.createSession(stack.workspaceDir)
    await client.createTerminal(session.id, 't2', { cols: 80, rows: 24 })
    let text = ''
    const statuses: string[] = []
    const abort = new AbortController()
    let ended: unknown
    const done = follow({
      client,
      sessionId: session.id,
      terminalId: 't2',
      attachment: 'restart-test',
      signal: abort.signal,
      handlers: {
        snapshot: (_sequence, screen) => (text += screen),
        output: (_sequence, bytes) => (text += Buffer.from(bytes).toString('latin1')),
        state: () => {},
        status: (s) => statuses.push(s),
      },
    }).then((end) => (ended = end))
    const send = (line: string) => client.input(session.id, 't2', 'restart-test', new TextEncoder().encode(line))
    try {
      await waitFor(async () => statuses.includes('live'), 20_000, 'the follow to attach')
      await send('echo "BEFORE-$((2*3))"\r')
      await waitFor(async () => text.includes('BEFORE-6'), 20_000, 'output before')
      const old = stack.sidecar
      await old.kill()
      // Down for longer than a couple of quick retries (the follow used to give up after ~1 s).
      await new Promise((r) => setTimeout(r, 3_000))
      expect(ended).toBeUndefined()
      stack.sidecar = await startSidecar({
        dataDir: old.dataDir,
        databaseUrl: old.databaseUrl,
        secret: old.secret,
        port: Number(new URL(old.url).port),
        env: { SHELL: '/bin/bash' },
      })
      await waitFor(async () => statuses.at(-1) === 'live', 30_000, 'the follow to resume')
      await send('echo "AFTER-$((3*4))"\r')
      await waitFor(async () => text.includes('AFTER-12'), 20_000, 'output after the restart')
      expect(ended).toBeUndefined()
      expect(text.split('BEFORE-6').length - 1).toBe(1)
    } finally {
      abort.abort()
      await done
    }
  })
})
