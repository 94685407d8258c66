/**
 * `termkeep attach` driven through a real PTY (node-pty runs `node cli/bin.js attach …`) against
 * the real Node API and a real sidecar: the remote screen appears, keystrokes reach the remote
 * shell, a local window-size change resizes the remote terminal, Ctrl-\ detaches, the local
 * terminal is restored and the remote terminal keeps running.
 */
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PtyProcess } from '../../sidecar/pty/pty-process.ts'
import { TermkeepClient } from '../../web/client/api.ts'
import { startProxy } from '../browser/proxy.ts'
import { commandEntered, journalText, startStack, type Stack } from '../browser/stack.ts'
import { waitFor } from '../support/ports.ts'

const BIN = fileURLToPath(new URL('../../cli/bin.js', import.meta.url))

function execCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    )
  })
}

/**
 * A CLI process in a real PTY, with everything it printed collected. Through the sidecar's
 * PtyProcess, which reads the master to the end (plain node-pty may drop the last bytes at exit):
 * `exited` resolves once the process exited and all its output was read.
 */
function runInPty(args: string[], env: Record<string, string>, cols = 100, rows = 30) {
  const pty = new PtyProcess({
    file: process.execPath,
    args: [BIN, ...args],
    cwd: process.cwd(),
    env: { ...process.env, ...env, TERM: 'xterm-256color' } as Record<string, string>,
    cols,
    rows,
  })
  const decoder = new TextDecoder()
  let output = ''
  pty.onData((data) => (output += decoder.decode(data, { stream: true })))
  const ended = new Promise<void>((resolve) => pty.onEnd(resolve))
  const exit = new Promise<number>((resolve) => pty.onExit(({ exitCode }) => resolve(exitCode ?? -1)))
  const exited = Promise.all([exit, ended]).then(([code]) => code)
  return { pty, exited, output: () => output, write: (text: string) => pty.write(Buffer.from(text)) }
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
    for (const pty of running) {
      try {
        process.kill(pty.pid, 'SIGKILL')
      } catch {}
    }
    await stack?.stop()
  })

  it('attaches, types, resizes, detaches with Ctrl-\\ and leaves the terminal running', async () => {
    const cli = runInPty(['attach', sessionId, terminalId], env, 100, 30)
    running.push(cli.pty)
    // Attaching takes control and sizes the remote terminal to this PTY.
    await waitFor(async () => {
      const info = await client.terminal(sessionId, terminalId)
      return info.cols === 100 && info.rows === 30
    }, 30_000, 'attach to size the remote terminal to 100x30')
    cli.write('echo attached-$((20+22))\r')
    await waitFor(async () => cli.output().includes('attached-42'), 20_000, 'the echo through attach')
    cli.write("printf '\\033[32mGREEN\\033[0m-%s\\n' ok\r")
    await waitFor(async () => cli.output().includes('GREEN\x1b[0m-ok') || /GREEN(\x1b\[[0-9;]*m)+-ok/.test(cli.output()), 20_000, 'coloured output through attach')
    // A local window-size change (SIGWINCH) reaches the remote terminal and its shell.
    cli.pty.resize(120, 40)
    await waitFor(async () => {
      const info = await client.terminal(sessionId, terminalId)
      return info.cols === 120 && info.rows === 40
    }, 20_000, 'the resize to reach the remote terminal')
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

  it('prints the persisted display in colour with `termkeep display`', async () => {
    const result = await waitFor(async () => {
      const r = await execCli(['display', sessionId, terminalId], env)
      return r.code === 0 && r.stdout.includes('-ok') ? r : undefined
    }, 30_000, 'a settled display with the coloured line')
    expect(result.stdout).toMatch(/\x1b\[0;32mGREEN/)
    expect(result.stdout).toContain('attached-42')
    const plain = await execCli(['display', sessionId, terminalId, '--plain'], env)
    expect(plain.stdout).toContain('GREEN-ok')
    expect(plain.stdout).not.toContain('\x1b[')
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
      await waitFor(async () => commandEntered(await journalText(stack, sessionId, terminalId), 'until [', 'done'), 20_000, 'the command to be entered')
      proxy.cut()
      writeFileSync(gate, '')
      await waitFor(async () => (await journalText(stack, sessionId, terminalId)).includes('N3-21'), 20_000, 'the output printed during the outage')
      proxy.restore()
      await waitFor(async () => cli.output().includes('N3-21'), 30_000, 'the output after reconnecting')
      for (const line of ['N1-7', 'N2-14', 'N3-21']) expect(cli.output().split(line).length - 1, line).toBe(1)
      cli.write('\x1c')
      expect(await cli.exited).toBe(0)
    } finally {
      await proxy.close()
    }
  })

  it('ends when the remote shell exits, and says so', async () => {
    const cli = runInPty(['attach', sessionId, terminalId], env, 120, 40)
    running.push(cli.pty)
    await waitFor(async () => cli.output().includes('again-2'), 20_000, 'the snapshot')
    cli.write('exit 3\r')
    expect(await cli.exited).toBe(0)
    expect(cli.output()).toContain('\x1b[?1049l')
    expect(cli.output()).toMatch(new RegExp(`\\[terminal ${sessionId}/${terminalId} ended \\((exited|closed|retired), exit code 3\\)\\]`))
  })
})
