/**
 * `termkeep attach` driven through a real PTY (node-pty runs `node cli/bin.js attach …`) against
 * the real Node API and a real sidecar: the remote screen appears, keystrokes reach the remote
 * shell, a local window-size change resizes the remote terminal, Ctrl-\ detaches, the local
 * terminal is restored and the remote terminal keeps running. What the user's terminal looks like
 * is checked by replaying everything the CLI printed into a headless xterm.js.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import headless, { type Terminal } from '@xterm/headless'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { self } from '../../cli/self.ts'
import type { PtyProcess } from '../../keeper/pty/pty-process.ts'
import { TermkeepClient } from '../../web/client/api.ts'
import { follow } from '../../web/client/follow.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { startProxy } from '../browser/proxy.ts'
import { commandEntered, journalText, startStack, type Stack } from '../browser/stack.ts'
import { waitFor } from '../support/ports.ts'
import { exitedWithin, killPtys, runCli, runInPty } from './run.ts'

const USER_SCREEN = 'USER-SCREEN-BEFORE-ATTACH'

/**
 * The user's terminal after it showed `output`: a headless xterm.js that already showed a line of
 * the user's own, then everything the CLI printed.
 */
async function localTerminal(output: string, cols: number, rows: number): Promise<Terminal> {
  const terminal = new headless.Terminal({ cols, rows, allowProposedApi: true })
  await new Promise<void>((resolve) => terminal.write(`${USER_SCREEN}\r\n${output}`, resolve))
  return terminal
}

function screenText(terminal: Terminal): string {
  const buffer = terminal.buffer.active
  const lines: string[] = []
  for (let y = 0; y < terminal.rows; y++) lines.push(buffer.getLine(buffer.viewportY + y)?.translateToString(true) ?? '')
  return lines.join('\n')
}

describe('termkeep attach (real PTY, full stack)', () => {
  let stack: Stack
  let client: TermkeepClient
  let sessionId: string
  const terminalId = 'cli-term'
  let env: Record<string, string>
  const running: PtyProcess[] = []

  beforeAll(async () => {
    stack = await startStack('cli')
    client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    await client.createWorkspace(stack.workspaceDir)
    sessionId = (await client.createSession(stack.workspaceDir)).id
    await client.createTerminal(sessionId, terminalId, { cols: 80, rows: 24 })
    env = { TERMKEEP_URL: stack.api.url, TERMKEEP_TOKEN: stack.token }
  })
  afterAll(async () => {
    killPtys(running)
    await stack?.stop()
  })

  it('attaches, types, resizes, detaches with Ctrl-\\ and leaves the terminal running', async () => {
    const cli = runInPty(['attach', sessionId, terminalId], env, 100, 30)
    running.push(cli.pty)
    // Attaching takes control and sizes the remote terminal to this PTY.
    await waitFor(
      async () => {
        const info = await client.terminal(sessionId, terminalId)
        return info.cols === 100 && info.rows === 30
      },
      30_000,
      'attach to size the remote terminal to 100x30',
    )
    cli.write('echo attached-$((20+22))\r')
    await waitFor(async () => cli.output().includes('attached-42'), 20_000, 'the echo through attach')
    cli.write("printf '\\033[32mGREEN\\033[0m-%s\\n' ok\r")
    await waitFor(
      async () => cli.output().includes('GREEN\x1b[0m-ok') || /GREEN(\x1b\[[0-9;]*m)+-ok/.test(cli.output()),
      20_000,
      'coloured output through attach',
    )
    cli.write("printf 'TRAIL-%s   \\033[44m  \\033[0m\\n' ok\r")
    await waitFor(async () => cli.output().includes('TRAIL-ok'), 20_000, 'a line ending in blanks')
    // A local window-size change (SIGWINCH) reaches the remote terminal and its shell.
    cli.pty.resize(120, 40)
    await waitFor(
      async () => {
        const info = await client.terminal(sessionId, terminalId)
        return info.cols === 120 && info.rows === 40
      },
      20_000,
      'the resize to reach the remote terminal',
    )
    cli.write('stty size\r')
    await waitFor(async () => cli.output().includes('40 120'), 20_000, 'stty size inside the attached shell')
    // Ctrl-\ detaches: the CLI exits 0, restores the local screen and says so.
    cli.write('\x1c')
    expect(await cli.exited).toBe(0)
    expect(cli.output()).toContain('\x1b[?1049l')
    expect(cli.output()).toContain(`[detached from ${sessionId}/${terminalId}; it keeps running]`)
    // The remote terminal is still running (the next test attaches to it again).
    expect((await client.terminal(sessionId, terminalId)).state).toBe('running')
  })

  it('prints the persisted display with `termkeep display`, in colour only on a terminal', async () => {
    const piped = await waitFor(
      async () => {
        const r = await runCli(['display', sessionId, terminalId], env)
        return r.code === 0 && r.stdout.includes('TRAIL-ok') ? r : undefined
      },
      30_000,
      'a settled display with the last line',
    )
    // Into a pipe: no escapes, and no trailing blanks (they carry nothing without colour).
    expect(piped.stdout).toContain('GREEN-ok')
    expect(piped.stdout).toContain('attached-42')
    expect(piped.stdout).not.toContain('\x1b[')
    expect(piped.stdout).toMatch(/^TRAIL-ok$/m)
    const onTty = runInPty(['display', sessionId, terminalId], env)
    running.push(onTty.pty)
    expect(await exitedWithin(onTty.exited, 20_000, 'display')).toBe(0)
    expect(onTty.output()).toMatch(/\x1b\[0;32mGREEN/)
    const noColor = runInPty(['display', sessionId, terminalId], { ...env, NO_COLOR: '1' })
    running.push(noColor.pty)
    expect(await exitedWithin(noColor.exited, 20_000, 'display')).toBe(0)
    expect(noColor.output()).toContain('GREEN-ok')
    expect(noColor.output()).not.toContain('\x1b[')
    const plain = runInPty(['display', sessionId, terminalId, '--plain'], env)
    running.push(plain.pty)
    expect(await exitedWithin(plain.exited, 20_000, 'display --plain')).toBe(0)
    expect(plain.output()).not.toContain('\x1b[')
    expect(plain.output()).toMatch(/^TRAIL-ok\r$/m)
    expect(plain.output()).not.toMatch(/ \r?$/m)
  })

  it('re-attaches to the same shell and sees its screen again', async () => {
    const cli = runInPty(['attach', sessionId, terminalId], env, 120, 40)
    running.push(cli.pty)
    await waitFor(async () => cli.output().includes('attached-42'), 20_000, 'the earlier output in the snapshot')
    cli.write('echo again-$((1+1))\r')
    await waitFor(async () => cli.output().includes('again-2'), 20_000, 'new output after re-attaching')
    cli.write('\x1c')
    expect(await cli.exited).toBe(0)
  })

  it('resumes after a network loss: output printed meanwhile arrives exactly once', async () => {
    const proxy = await startProxy(stack.api.url)
    try {
      const cli = runInPty(['attach', sessionId, terminalId], { ...env, TERMKEEP_URL: proxy.url }, 120, 40)
      running.push(cli.pty)
      await waitFor(async () => cli.output().includes('again-2'), 20_000, 'the snapshot')
      // The output waits for a gate file created after the cut, so it really is printed during
      // the outage, however slow this process is.
      const gate = join(stack.workspaceDir, 'attach-gate')
      cli.write(`until [ -e ${gate} ]; do sleep 0.1; done; for i in 1 2 3; do echo "N$i-$((i*7))"; done\r`)
      await waitFor(
        async () => commandEntered(await journalText(stack, sessionId, terminalId), 'until [', 'done'),
        20_000,
        'the command to be entered',
      )
      proxy.cut()
      writeFileSync(gate, '')
      await waitFor(
        async () => (await journalText(stack, sessionId, terminalId)).includes('N3-21'),
        20_000,
        'the output printed during the outage',
      )
      proxy.restore()
      await waitFor(async () => cli.output().includes('N3-21'), 30_000, 'the output after reconnecting')
      for (const line of ['N1-7', 'N2-14', 'N3-21']) expect(cli.output().split(line).length - 1, line).toBe(1)
      cli.write('\x1c')
      expect(await cli.exited).toBe(0)
    } finally {
      await proxy.close()
    }
  })

  it('starts a terminal with `termkeep new`: detached it prints the ids, else it attaches to it', async () => {
    const detached = await runCli(['new', '--detached', '--cwd', stack.workspaceDir, '--title', 'from new'], env)
    expect(detached.code, detached.stderr).toBe(0)
    const [newSession, newTerminal] = detached.stdout.trim().split(' ')
    expect(await client.terminal(newSession!, newTerminal!)).toMatchObject({ state: 'running', title: 'from new', cols: 80, rows: 24 })
    expect((await client.session(newSession!)).cwd).toBe(stack.workspaceDir)

    const cli = runInPty(['new', '--session', sessionId], env, 90, 25)
    running.push(cli.pty)
    await waitFor(async () => cli.output().includes('termkeep: started'), 20_000, 'new to start a terminal')
    const started = cli.output().match(/termkeep: started (\S+) (\S+)/)!
    expect(started[1]).toBe(sessionId)
    cli.write('echo from-new-$((40+2))\r')
    await waitFor(async () => cli.output().includes('from-new-42'), 20_000, 'the echo through new')
    cli.write('\x1c')
    expect(await exitedWithin(cli.exited, 20_000, 'new after Ctrl-\\')).toBe(0)
    expect(await client.terminal(sessionId, started[2]!)).toMatchObject({ state: 'running', cols: 90, rows: 25 })

    const both = await runCli(['new', '--session', sessionId, '--cwd', '/tmp'], env)
    expect(both.code).toBe(2)
  })

  it('ends when the remote shell exits, and says so', async () => {
    const cli = runInPty(['attach', sessionId, terminalId], env, 120, 40)
    running.push(cli.pty)
    await waitFor(async () => cli.output().includes('again-2'), 20_000, 'the snapshot')
    cli.write('exit 3\r')
    // As ssh does: the remote shell's exit code becomes attach's.
    expect(await cli.exited).toBe(3)
    expect(cli.output()).toContain('\x1b[?1049l')
    expect(cli.output()).toMatch(new RegExp(`\\[terminal ${sessionId}/${terminalId} ended \\((exited|closed|retired), exit code 3\\)\\]`))
  })

  it('says so when the terminal already ended, without taking over the local terminal', async () => {
    const cli = runInPty(['attach', sessionId, terminalId], env, 120, 40)
    running.push(cli.pty)
    expect(await exitedWithin(cli.exited, 20_000, 'attach to an ended terminal')).toBe(1)
    expect(cli.output()).toMatch(
      new RegExp(
        `terminal ${sessionId}/${terminalId} (has exited \\(exit code 3\\)|is closed|is retired); \`${self().replace(/\./g, '\\.')} display ${sessionId} ${terminalId}\` prints its last screen`,
      ),
    )
    expect(cli.output()).not.toContain('\x1b[?1049h')
  })

  /** A fresh remote terminal for one test. */
  async function freshTerminal(id: string): Promise<string> {
    await client.createTerminal(sessionId, id, { cols: 80, rows: 24 })
    return id
  }

  /** Attach sized the fresh (80x24) remote terminal to its PTY: only the controller can. */
  const sizedBy = (id: string, cols: number, rows: number) => async () => {
    const info = await client.terminal(sessionId, id)
    return info.cols === cols && info.rows === rows
  }

  it('keeps the local terminal on its own alternate screen, and restores every mode on detach', async () => {
    const id = await freshTerminal('cli-screen')
    const cli = runInPty(['attach', sessionId, id], env, 100, 30)
    running.push(cli.pty)
    await waitFor(sizedBy(id, 100, 30), 20_000, 'attach to take control')
    cli.write('echo before-$((40+2))\r')
    await waitFor(async () => cli.output().includes('before-42'), 20_000, 'the line before the full-screen program')
    // A full-screen program (less, vim) starts and quits; other modes ride in the same sequences.
    cli.write(`printf '\\033[?1049;1hFULLSCREEN-%s' up; sleep 1; printf '\\033[?1;1049l'; echo after-$((1+2))\r`)
    await waitFor(async () => cli.output().includes('FULLSCREEN-up'), 20_000, 'the full-screen program')
    await waitFor(async () => cli.output().includes('after-3'), 20_000, 'the shell after the full-screen program')
    const during = await localTerminal(cli.output(), 100, 30)
    expect(during.buffer.active.type).toBe('alternate')
    // The screen the remote program returned to is drawn again: the shell lines from before it.
    expect(screenText(during)).toContain('before-42')
    expect(screenText(during)).not.toContain('FULLSCREEN-up')
    expect(screenText(during)).toContain('after-3')
    // Modes a remote program may leave on: mouse, focus, application keys and keypad, scroll
    // region, autowrap off (bash itself turns bracketed paste on at each prompt).
    cli.write(`printf '\\033[?1000h\\033[?1006h\\033[?1004h\\033[?1h\\033=\\033[3;20r\\033[?7l'; echo modes-$((3*3))\r`)
    await waitFor(async () => cli.output().includes('modes-9'), 20_000, 'the modes to be set')
    const on = await localTerminal(cli.output(), 100, 30)
    expect(on.modes).toMatchObject({
      mouseTrackingMode: 'vt200',
      sendFocusMode: true,
      applicationCursorKeysMode: true,
      wraparoundMode: false,
    })
    cli.write('\x1c')
    expect(await exitedWithin(cli.exited, 20_000, 'attach after Ctrl-\\')).toBe(0)
    const after = await localTerminal(cli.output(), 100, 30)
    expect(after.buffer.active.type).toBe('normal')
    expect(screenText(after)).toContain(USER_SCREEN)
    expect(after.modes).toMatchObject({
      mouseTrackingMode: 'none',
      sendFocusMode: false,
      bracketedPasteMode: false,
      applicationCursorKeysMode: false,
      applicationKeypadMode: false,
      wraparoundMode: true,
    })
    // Scroll margins are per screen in xterm.js but global in xterm: the reset must be sent.
    const tail = cli.output().slice(cli.output().lastIndexOf('modes-9'))
    expect(tail).toContain('\x1b[r')
  })

  it('sends keys typed while attaching once control is confirmed, in order', async () => {
    const id = await freshTerminal('cli-early')
    const cli = runInPty(['attach', sessionId, id], env, 100, 30)
    running.push(cli.pty)
    cli.write('echo early-$((6*7))\r')
    cli.write('echo second-$((6+7))\r')
    await waitFor(async () => cli.output().includes('second-13'), 20_000, 'the keys typed while attaching')
    const journal = await journalText(stack, sessionId, id)
    expect(journal.indexOf('early-42')).toBeLessThan(journal.indexOf('second-13'))
    expect(journal.indexOf('early-42')).toBeGreaterThan(-1)
    cli.write('\x1c')
    expect(await exitedWithin(cli.exited, 20_000, 'attach after Ctrl-\\')).toBe(0)
    expect(cli.output()).not.toContain('another client')
    expect(cli.output()).not.toContain('not sent')
  })

  it('says when another client takes control, and takes it back once it is free', async () => {
    const id = await freshTerminal('cli-control')
    const cli = runInPty(['attach', sessionId, id], env, 100, 30)
    running.push(cli.pty)
    await waitFor(sizedBy(id, 100, 30), 20_000, 'attach to take control')
    // Another client (a page, another CLI) attaches: its follow makes it the controller.
    const rival = new AbortController()
    let rivalControls = false
    const handlers = {
      snapshot: (_s: number, _screen: string, info: TerminalInfo) => void (rivalControls = info.controllerId === 'rival'),
      output() {},
      state() {},
    }
    const rivalEnd = follow({ client, sessionId, terminalId: id, attachment: 'rival', handlers, signal: rival.signal })
    try {
      await waitFor(async () => rivalControls, 20_000, 'the rival to take control')
      await waitFor(async () => cli.output().includes('\x1b]2;termkeep: read-only'), 20_000, 'the read-only notice in the title')
      cli.write('echo lost-$((1+1))\r')
      await sleep(1000)
      expect(await journalText(stack, sessionId, id)).not.toContain('lost-')
    } finally {
      rival.abort()
      await rivalEnd
    }
    // The rival left, so control is free: attach takes it back (the notice goes away) and keys
    // are sent again.
    const lastTitle = () => [...cli.output().matchAll(/\x1b\]2;([^\x07]*)\x07|\x1b\[23;0t/g)].map((m) => m[1] ?? '(restored)').at(-1)
    await waitFor(async () => !lastTitle()?.includes('read-only'), 20_000, 'the read-only notice to go away')
    cli.write('echo back-$((2+3))\r')
    await waitFor(async () => cli.output().includes('back-5'), 20_000, 'keys sent again')
    cli.write('\x1c')
    expect(await exitedWithin(cli.exited, 20_000, 'attach after Ctrl-\\')).toBe(0)
    expect(cli.output()).toContain('byte(s) of input were not sent')
  })

  it('shows that it is reconnecting, and gives up after the reconnect timeout', async () => {
    const proxy = await startProxy(stack.api.url)
    try {
      const cli = runInPty(['attach', sessionId, 'cli-control', '--reconnect-timeout', '3'], { ...env, TERMKEEP_URL: proxy.url }, 100, 30)
      running.push(cli.pty)
      cli.write('echo ready-$((5*5))\r')
      await waitFor(async () => cli.output().includes('ready-25'), 20_000, 'attach to take control')
      proxy.cut()
      await waitFor(async () => cli.output().includes('\x1b]2;termkeep: reconnecting'), 20_000, 'the reconnecting notice')
      expect(await exitedWithin(cli.exited, 20_000, 'attach without a server')).toBe(1)
      expect(cli.output()).toContain(`termkeep: lost the connection to ${proxy.url}; gave up after 3 s`)
      expect(cli.output()).toContain('\x1b[?1049l')
    } finally {
      await proxy.close()
    }
  })
})
