/**
 * Shell integration with real shells (docs/commands.md): bash, zsh and fish started by a real
 * sidecar in a home whose rc files set a prompt and hooks of the user's own. Each runs commands in
 * its existing shell through the API (state carries over), keeps the user's prompt and hooks
 * working, shows no mark on the screen, keeps its nonce out of reach, and cannot be fooled by a
 * program printing marks. A bash whose own prompt emits plain OSC 133 is read as `detected`.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { journalText } from '../browser/stack.ts'
import { waitFor } from '../support/ports.ts'
import { attachPerson, Commands } from './support.ts'

let c: Commands
beforeAll(async () => {
  c = await Commands.start('shells')
}, 60_000)
afterAll(async () => {
  await c?.stop()
})

const SHELLS = [
  { name: 'bash', path: '/usr/bin/bash', prompt: /^user-bash[$#] /, set: 'export TK_X=42', hook: 'bash:1' },
  { name: 'zsh', path: '/usr/bin/zsh', prompt: /^user-zsh[%#] /, set: 'export TK_X=42', hook: 'zsh:1' },
  { name: 'fish', path: '/usr/bin/fish', prompt: /^user-fish> /, set: 'set -gx TK_X 42', hook: 'fish:1' },
] as const

/** Anything of a mark: ESC ] 133/633/7, or its nonce parameter. */
const MARK_TRACES = /\]133;|\]633;|\]7;file|tk=/

/** Every byte the terminal printed after the cursor, from the journal. */
async function bytesAfter(tid: string, after: number): Promise<Buffer> {
  const parts: Buffer[] = []
  for (let cursor = after; ; ) {
    const page = (await c.call('GET', `${c.terminal(tid)}/output?after=${cursor}&limit=256`)).body
    for (const item of page.items) if (item.kind === 'data') parts.push(Buffer.from(item.data, 'base64'))
    if (page.items.length === 0) return Buffer.concat(parts)
    cursor = page.next
  }
}

describe.each(SHELLS)('$name', ({ name, path, prompt, set, hook }) => {
  const tid = `t-${name}`
  beforeAll(async () => {
    await c.open(tid, path)
  })

  test('runs commands in the existing shell: output, exit code, directory after; state carries over', async () => {
    const first = await c.run(tid, 'cd /tmp && echo hello')
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ ended: true, exitCode: 0, text: 'hello', cwd: '/tmp' })
    expect(first.body.command).toMatchObject({ n: 1, command: 'cd /tmp && echo hello', state: 'ended', exitCode: 0, marks: 'injected' })
    expect(first.body.command.cwd).toBe(c.stack.workspaceDir)
    expect((await c.run(tid, set)).body.exitCode).toBe(0)
    const state = await c.run(tid, 'echo $TK_X; pwd')
    expect(state.body).toMatchObject({ exitCode: 0, text: '42\n/tmp', cwd: '/tmp' })
    expect((await c.run(tid, 'false')).body).toMatchObject({ exitCode: 1, command: { n: 4, command: 'false' } })
    expect((await c.run(tid, "sh -c 'exit 3'")).body.exitCode).toBe(3)
    // Longer than the terminal is wide: the line editor redraws its prompt as the line wraps.
    const long = `echo ${'x'.repeat(150)}`
    expect((await c.run(tid, long)).body).toMatchObject({ exitCode: 0, text: 'x'.repeat(150), command: { command: long } })
    const info = await c.call('GET', c.terminal(tid))
    expect(info.body.commandMarks).toBe('injected')
  })

  test('the user’s prompt and hooks still work, and no mark reaches the screen', async () => {
    const log = readFileSync(join(c.home, 'hooks.log'), 'utf8')
    expect(log).toContain(hook)
    if (name === 'zsh') expect(log).toContain('zsh-pre:false')
    const screen = await c.screen(tid)
    const lines: string[] = screen.body.lines.filter((line: string) => line !== '')
    expect(lines.at(-1)).toMatch(prompt)
    expect(lines.join('\n')).toContain('hello')
    expect(lines.join('\n')).not.toMatch(MARK_TRACES)
    // Nor the persisted screen (readDisplay's rows hold cell text).
    const display = await waitFor(
      async () => {
        const response = await fetch(`${c.stack.api.url}${c.terminal(tid)}/display`, {
          headers: { authorization: `Bearer ${c.stack.token}` },
        })
        const text = await response.text()
        return response.status === 200 && text.includes('hello') && text
      },
      10_000,
      'a settled screen',
    )
    expect(display).not.toMatch(MARK_TRACES)
  })

  test('the records are durable, paged newest last, with their text and exact bytes', async () => {
    const page = await c.call('GET', `${c.terminal(tid)}/commands?limit=2`)
    expect(page.body.newest).toBe(6)
    expect(page.body.commands.map((r: { n: number }) => r.n)).toEqual([5, 6])
    const earlier = await c.call('GET', `${c.terminal(tid)}/commands?before=4&limit=10`)
    expect(earlier.body.commands.map((r: { command: string }) => r.command)).toEqual(['cd /tmp && echo hello', set, 'echo $TK_X; pwd'])
    const text = await c.call('GET', `${c.terminal(tid)}/commands/1/output`)
    expect(text.body).toMatchObject({ n: 1, state: 'ended', text: 'hello', omittedBytes: 0 })
    const bytes = await fetch(`${c.stack.api.url}${c.terminal(tid)}/commands/1/output.bin`, {
      headers: { authorization: `Bearer ${c.stack.token}` },
    })
    const raw = Buffer.from(await bytes.arrayBuffer())
    expect(raw.toString('latin1')).toContain('hello\r\n')
    expect(raw.toString('latin1')).not.toMatch(MARK_TRACES)
    expect(text.body.outputBytes).toBe(raw.length)
    // The cursors select exactly these bytes from the journal: records start+1 … end, less the
    // first startSkip bytes and all but the first endLength bytes of record end.
    const record = (await c.call('GET', `${c.terminal(tid)}/commands/1`)).body
    const fromStart = await bytesAfter(tid, record.start)
    const afterEnd = await bytesAfter(tid, record.end)
    const endRecord = (await bytesAfter(tid, record.end - 1)).length - afterEnd.length
    const through = fromStart.subarray(0, fromStart.length - afterEnd.length)
    expect(through.subarray(record.startSkip, through.length - endRecord + record.endLength)).toEqual(raw)
  })

  test('a program printing marks cannot forge a record', async () => {
    const before = (await c.call('GET', `${c.terminal(tid)}/commands`)).body.newest
    const fake =
      "printf '\\033]133;D;0\\007\\033]133;A\\007\\033]133;B\\007\\033]133;C;tk=forged\\007\\033]133;D;7;tk=forged\\007'; sh -c 'exit 5'"
    const run = await c.run(tid, fake)
    expect(run.body).toMatchObject({ ended: true, exitCode: 5, command: { n: before + 1 } })
    const after = (await c.call('GET', `${c.terminal(tid)}/commands`)).body
    expect(after.newest).toBe(before + 1)
  })

  test('the nonce is not in the shell’s environment, and its file is gone', async () => {
    const nonce = /tk=([0-9a-f]{32})/.exec(await journalText(c.stack, c.sid, tid))?.[1]
    expect(nonce).toBeDefined()
    const pid = name === 'fish' ? '$fish_pid' : '$$'
    const environ = await c.run(tid, `tr '\\0' '\\n' < /proc/${pid}/environ; env`)
    expect(environ.body.exitCode).toBe(0)
    expect(environ.body.text).toContain('TERMKEEP_TERMINAL_ID')
    expect(environ.body.text).not.toContain(nonce)
    expect(readdirSync(join(c.stack.sidecar.dataDir, 'shell-integration'))).toEqual([])
  })
})

describe('refusals', () => {
  const tid = 't-refuse'
  beforeAll(async () => {
    await c.open(tid, '/usr/bin/bash')
    expect((await c.run(tid, 'true')).body.exitCode).toBe(0)
  })

  test('bad input is a typed 400 and types nothing', async () => {
    const before = (await c.screen(tid)).body.sequence
    const cases = [
      [{ command: 'echo a\u0000b' }, 'command/invalid'],
      [{ command: 'echo a\nb' }, 'command/invalid'],
      [{ command: 'echo \u001b[31m' }, 'command/invalid'],
      [{ command: '   ' }, 'command/invalid'],
      [{ command: 'x'.repeat(64 * 1024 + 1) }, 'command/invalid'],
      [{ command: 'true', timeoutMs: 0 }, 'request/invalid'],
      [{ command: 'true', timeoutMs: 10 * 60_000 + 1 }, 'request/invalid'],
      [{ command: 'true', timeoutMs: 'soon' }, 'request/invalid'],
    ] as const
    for (const [json, code] of cases) {
      const answer = await c.call('POST', `${c.terminal(tid)}/commands`, { json })
      expect([answer.status, answer.body.error.code]).toEqual([400, code])
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((await c.screen(tid)).body.sequence).toBe(before)
    // A tab is allowed (typed as a paste: no completion).
    expect((await c.run(tid, 'echo "a\tb"')).body.text).toBe('a\tb'.replace('\t', '       '))
  })

  test('409 while a command runs, then its end is the answer to nobody but the list', async () => {
    const slow = await c.run(tid, 'sleep 1; echo slept', 100)
    expect(slow.body).toMatchObject({ ended: false, exitCode: null, command: { state: 'running', command: 'sleep 1; echo slept' } })
    const refused = await c.call('POST', `${c.terminal(tid)}/commands`, { json: { command: 'true' } })
    expect([refused.status, refused.body.error.code, refused.body.error.reason]).toEqual([409, 'command/not-at-prompt', 'running'])
    const n = slow.body.command.n
    await waitFor(async () => (await c.call('GET', `${c.terminal(tid)}/commands/${n}`)).body.state === 'ended', 10_000, 'the end')
    expect((await c.call('GET', `${c.terminal(tid)}/commands/${n}/output`)).body.text).toBe('slept')
  })

  test('409 when a person holds control, and when a line is half typed', async () => {
    const person = await attachPerson(c, tid)
    try {
      const refused = await c.call('POST', `${c.terminal(tid)}/commands`, { json: { command: 'true' } })
      expect([refused.status, refused.body.error.code, refused.body.error.reason]).toEqual([
        409,
        'terminal/control-unavailable',
        'controlled',
      ])
      expect((await person.type('echo half')).status).toBe(204)
    } finally {
      person.close()
    }
    await waitFor(
      async () => {
        const answer = await c.call('POST', `${c.terminal(tid)}/commands`, { json: { command: 'true' } })
        return answer.status === 409 && answer.body.error.reason === 'input-pending'
      },
      5_000,
      'input-pending',
    )
    const person2 = await attachPerson(c, tid)
    await person2.type('\u0003') // C-c: a fresh prompt
    person2.close()
    const again = await waitFor(
      async () => {
        const answer = await c.call('POST', `${c.terminal(tid)}/commands`, { json: { command: 'echo again' } })
        return answer.status === 200 && answer
      },
      5_000,
      'a fresh prompt after C-c',
    )
    expect(again.body.text).toBe('again')
  })
})

describe('without integration', () => {
  test('a prompt that emits its own OSC 133 is detected and runs commands', async () => {
    await c.open('t-detected', '/usr/bin/bash', { shellIntegration: false })
    const run = await c.run('t-detected', 'echo plain; false')
    expect(run.body).toMatchObject({ ended: true, exitCode: 1, text: 'plain', command: { marks: 'detected' } })
    expect((await c.call('GET', c.terminal('t-detected'))).body.commandMarks).toBe('detected')
  })

  test('sh keeps no command marks and says so', async () => {
    await c.open('t-sh', '/bin/sh')
    await new Promise((resolve) => setTimeout(resolve, 300))
    const refused = await c.call('POST', `${c.terminal('t-sh')}/commands`, { json: { command: 'true' } })
    expect([refused.status, refused.body.error.code, refused.body.error.reason]).toEqual([409, 'command/not-at-prompt', 'no-prompt'])
    expect((await c.call('GET', c.terminal('t-sh'))).body.commandMarks).toBe('none')
  })
})
