/**
 * The client commands driven as a user runs them (`node cli/bin.js …`) against the real stack (a
 * real sidecar process, the Node API, real PTYs): workspace, ls, new --cwd, send, screen, output,
 * close and token, each with its error paths (exit 2 for usage, 1 for a refusal, the server's
 * code in the message).
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createToken } from '../../storage/tokens.ts'
import type { Grant } from '../../schema/grants.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { TermkeepClient, terminalPath } from '../../web/client/api.ts'
import { follow } from '../../web/client/follow.ts'
import { journalText, startStack, type Stack } from '../browser/stack.ts'
import { waitFor } from '../support/ports.ts'
import { shellsFixture } from '../support/terminals.ts'
import { runCli, startCli } from './run.ts'

/** Programs that show every byte they get (`cat -v`: ESC as ^[, Ctrl-C as ^C, Enter as ^M), one of
 * them with application cursor keys on, as vim and less set them; and a plain line-by-line `cat`. */
const SHELLS = {
  'keys-app': `printf '\\033[?1h'; stty raw -echo; printf 'READY\\r\\n'; exec cat -v`,
  'keys-plain': `stty raw -echo; printf 'READY\\r\\n'; exec cat -v`,
  lines: `printf 'READY\\n'; exec cat`,
}

describe('termkeep client commands against a real stack', () => {
  let stack: Stack
  let client: TermkeepClient
  let env: Record<string, string>
  const shells = shellsFixture(SHELLS)
  const token = async (grants: Grant[], sessions: 'all' | string[] = 'all') =>
    (await createToken(stack.storage.db, { name: 'cli-test', grants, sessions })).secret
  const dir = (name: string) => {
    const path = join(stack.workspaceDir, name)
    mkdirSync(path, { recursive: true })
    return realpathSync(path)
  }
  const expectRefused = (result: { code: number; stderr: string }, code: string) => {
    expect(result.code, result.stderr).toBe(1)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain(`(${code})`)
  }
  const expectUsage = (result: { code: number; stderr: string }) => {
    expect(result.code, result.stderr).toBe(2)
    expect(result.stderr).toMatch(/^termkeep: /)
  }

  beforeAll(async () => {
    stack = await startStack('cli-commands', { sidecarEnv: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
    client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    env = { TERMKEEP_URL: stack.api.url, TERMKEEP_TOKEN: stack.token }
  })
  afterAll(async () => {
    await stack?.stop()
  })

  it('workspace add, ls, rename and rm, with --json and their refusals', async () => {
    const alpha = dir('alpha')
    expect((await runCli(['workspace', 'ls'], env)).stdout).toContain('no workspaces')
    const added = await runCli(['workspace', 'add', alpha, '--title', 'Alpha'], env)
    expect(added.code, added.stderr).toBe(0)
    expect(added.stdout).toMatch(new RegExp(`^registered: Alpha  ${alpha}  \\[ws_[\\w-]+\\]  0 sessions\\n$`))
    const [again, listed, otherAdded] = await Promise.all([
      runCli(['workspace', 'add', alpha, '--json'], env),
      runCli(['workspace', 'ls', '--json'], env),
      runCli(['workspace', 'add', dir('other'), '--json'], env),
    ])
    const { workspace, created } = JSON.parse(again.stdout)
    expect(created).toBe(false)
    expect(workspace).toMatchObject({ path: alpha, title: 'Alpha' })
    expect(JSON.parse(listed.stdout).workspaces.map((w: any) => w.id)).toContain(workspace.id)
    const other = JSON.parse(otherAdded.stdout).workspace
    const renamed = await runCli(['workspace', 'rename', workspace.id, 'Beta'], env)
    expect(renamed.stdout).toContain('renamed: Beta')

    const readOnly = await token(['workspaces:read'])
    const [lsAfter, conflict, missing, forbidden] = await Promise.all([
      runCli(['workspace', 'ls'], env),
      runCli(['workspace', 'rename', other.id, 'Beta'], env),
      runCli(['workspace', 'add', join(alpha, 'no-such-dir')], env),
      runCli(['workspace', 'add', dir('refused')], { ...env, TERMKEEP_TOKEN: readOnly }),
    ])
    expect(lsAfter.stdout).toContain(`Beta  ${alpha}  [${workspace.id}]`)
    expectRefused(conflict, 'workspace/name-conflict')
    expectRefused(missing, 'workspace/invalid-path')
    expectRefused(forbidden, 'auth/forbidden')

    const [removed] = await Promise.all([runCli(['workspace', 'rm', workspace.id], env), runCli(['workspace', 'rm', other.id], env)])
    expect(removed.stdout).toContain(`unregistered workspace ${workspace.id}`)
    const usages = await Promise.all(
      [
        ['workspace', 'rm', workspace.id],
        ['workspace'],
        ['workspace', 'add'],
        ['workspace', 'rename', 'x'],
        ['workspace', 'ls', 'extra'],
        ['workspace', 'frob'],
        ['workspace', 'ls', '--title', 'x'],
      ].map((args) => runCli(args, env)),
    )
    expectRefused(usages.shift()!, 'workspace/not-found')
    usages.forEach(expectUsage)
  })

  it('new --cwd registers the workspace when the token may, says why the session stands alone when not; ls shows both', async () => {
    const registered = dir('registered')
    const alone = dir('alone')
    const noRegistry = await token(['sessions:write', 'terminals:control', 'workspaces:read'])
    const refused = await runCli(['new', '--detached', '--cwd', alone], { ...env, TERMKEEP_TOKEN: noRegistry })
    expect(refused.code, refused.stderr).toBe(0)
    const [aloneSession, aloneTerminal] = refused.stdout.trim().split(' ')
    expect(refused.stderr).toMatch(new RegExp(`session ${aloneSession} stands alone \\(in no workspace\\): .*\\(auth/forbidden\\)`))
    const first = await runCli(['new', '--detached', '--cwd', registered], env)
    const [session] = first.stdout.trim().split(' ')
    expect(first.stderr).toMatch(
      new RegExp(`registered workspace "registered" for ${registered} \\[ws_[\\w-]+\\]; session ${session} is in it`),
    )
    const second = await runCli(['new', '--detached', '--cwd', registered], env)
    expect(second.stderr).toContain('is in workspace ws_')

    // A terminal whose foreground program is not its shell: ls names the program, as tmux does.
    await client.json('PUT', terminalPath(session, 't-sleeps'), { json: { cols: 80, rows: 24, command: 'sleep 300' } })
    await waitFor(async () => (await client.terminal(session, 't-sleeps')).foregroundCommand === 'sleep', 20_000, 'sleep to run')

    const ls = await runCli(['ls'], env)
    expect(ls.code, ls.stderr).toBe(0)
    const [inWorkspaces, standalone] = ls.stdout.split('(in no workspace)\n')
    expect(inWorkspaces).toContain(`registered  ${registered}`)
    expect(inWorkspaces).toMatch(new RegExp(`session ${session}  live: (bash, sleep|sleep, bash)\n`))
    expect(inWorkspaces).toContain('t-sleeps  running  80x24  sleep  "bash"\n')
    expect(standalone).toContain(`session ${aloneSession}  ${alone}`)
    expect(standalone).toMatch(new RegExp(`${aloneTerminal}  (starting|running)  80x24`))
    const json = JSON.parse((await runCli(['ls', '--json'], env)).stdout)
    expect(json.standalone.map((s: any) => s.id)).toContain(aloneSession)
    const workspace = json.workspaces.find((w: any) => w.path === registered)
    expect(workspace.sessions.map((s: any) => s.id)).toContain(session)
    expect(workspace.sessions[0].terminals[0]).toMatchObject({ cols: 80, rows: 24 })

    // A token bound to one session sees only it; without a terminal grant its terminals are not listed.
    const bound = await token(['workspaces:read'], [aloneSession])
    const scoped = JSON.parse((await runCli(['ls', '--json'], { ...env, TERMKEEP_TOKEN: bound })).stdout)
    expect(scoped.standalone.map((s: any) => s.id)).toEqual([aloneSession])
    expect(scoped.standalone[0].terminals).toBeNull()
    expect(scoped.workspaces.every((w: any) => w.sessions.length === 0)).toBe(true)
    expect((await runCli(['ls'], { ...env, TERMKEEP_TOKEN: bound })).stdout).toContain(
      '(terminals not listed: this token lacks the grant terminals:control or terminals:display',
    )
    expectUsage(await runCli(['ls', 'extra'], env))
  })

  it('send types text and tmux keys in order, in the cursor-key form the program asked for, taking control only for that moment', async () => {
    const sid = (await client.createSession(dir('send'))).id
    for (const id of ['keys-app', 'keys-plain']) await client.createTerminal(sid, id, { cols: 80, rows: 24, shell: shells.path(id) })
    for (const id of ['keys-app', 'keys-plain'])
      await waitFor(async () => (await journalText(stack, sid, id)).includes('READY'), 20_000, `${id} to start`)
    // Another client holds control; send takes it, types, and leaves it free.
    const rival = new AbortController()
    const controllers: (string | null)[] = []
    const onInfo = (info: TerminalInfo) => void controllers.push(info.controllerId)
    const rivalEnd = follow({
      client,
      sessionId: sid,
      terminalId: 'keys-app',
      attachment: 'rival',
      signal: rival.signal,
      handlers: { snapshot: (_s, _x, info) => onInfo(info), output() {}, state: onInfo },
    })
    await waitFor(async () => controllers.at(-1) === 'rival', 20_000, 'the rival to take control')
    const sent = await runCli(['send', sid, 'keys-app', 'echo', 'hi', '--key', 'Up', '--key', 'C-c', '--key', 'Enter', '--', '-x'], env)
    expect(sent.code, sent.stderr).toBe(0)
    expect(sent.stdout).toBe('')
    await waitFor(
      async () => (await journalText(stack, sid, 'keys-app')).includes('echo hi^[OA^C^M-x'),
      20_000,
      'the keys in application form',
    )
    await waitFor(async () => controllers.at(-1) === null, 20_000, 'control to be free again')
    expect(controllers.some((id) => id?.startsWith('cli-send-'))).toBe(true)
    rival.abort()
    await rivalEnd
    expect((await runCli(['send', sid, 'keys-plain', 'a b', '--key', 'Up', '--key', 'M-x', '--key', 'F5'], env)).code).toBe(0)
    await waitFor(async () => (await journalText(stack, sid, 'keys-plain')).includes('a b^[[A^[x^[[15~'), 20_000, 'the keys in normal form')

    const output = await token(['terminals:output', 'terminals:screen'])
    const [unknownKey, nothing, oneArg, noTerminal, noControl] = await Promise.all([
      runCli(['send', sid, 'keys-plain', '--key', 'Bogus'], env),
      runCli(['send', sid, 'keys-plain'], env),
      runCli(['send', sid], env),
      runCli(['send', sid, 'no-such-terminal', 'x'], env),
      runCli(['send', sid, 'keys-plain', 'x'], { ...env, TERMKEEP_TOKEN: output }),
    ])
    expectUsage(unknownKey)
    expect(unknownKey.stderr).toContain('"Bogus" is not a key name')
    expectUsage(nothing)
    expectUsage(oneArg)
    expectRefused(noTerminal, 'terminal/not-found')
    expectRefused(noControl, 'auth/forbidden')
  })

  it('screen, output (text, --raw, --after, --follow), screen --watch and close', async () => {
    const sid = (await client.createSession(dir('read'))).id
    await client.createTerminal(sid, 'show', { cols: 80, rows: 24, shell: shells.path('lines') })
    await waitFor(async () => (await journalText(stack, sid, 'show')).includes('READY'), 20_000, 'the program to start')
    const follower = startCli(['output', sid, 'show', '--follow'], env)
    const watcher = startCli(['screen', sid, 'show', '--watch', '--json'], env)
    await waitFor(async () => watcher.stdout().includes('READY'), 20_000, 'the first watched screen')
    expect((await runCli(['send', sid, 'show', 'héllo ✓', '--key', 'Enter'], env)).code).toBe(0)
    const screen = await waitFor(
      async () => {
        const r = await runCli(['screen', sid, 'show'], env)
        return r.stdout.includes('héllo ✓') ? r : undefined
      },
      20_000,
      'the screen to show the text',
    )
    // The line's echo by the terminal, then cat's copy of it.
    expect(screen.stdout).toBe('READY\nhéllo ✓\nhéllo ✓\n')
    const projection = JSON.parse((await runCli(['screen', sid, 'show', '--json'], env)).stdout)
    expect(projection).toMatchObject({ cols: 80, rows: 24, alternateScreen: false })
    const [text, raw] = await Promise.all([runCli(['output', sid, 'show'], env), runCli(['output', sid, 'show', '--raw'], env)])
    expect(text.stdout).toBe('READY\r\nhéllo ✓\r\nhéllo ✓\r\n')
    expect(raw.bytes.equals(Buffer.from(await journalText(stack, sid, 'show'), 'latin1'))).toBe(true)
    // --after: only what came after that sequence.
    expect((await runCli(['send', sid, 'show', 'later'], env)).code).toBe(0)
    await waitFor(async () => (await journalText(stack, sid, 'show')).includes('later'), 20_000, 'more output')
    const after = await runCli(['output', sid, 'show', '--after', String(projection.sequence)], env)
    expect(after.stdout).toBe('later')
    await waitFor(async () => watcher.stdout().includes('later'), 20_000, 'a later watched screen')
    const frames = watcher
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(frames.length).toBeGreaterThanOrEqual(2)
    expect(frames.at(-1).lines.join('\n')).toContain('héllo ✓\nlater')

    const closed = await runCli(['close', sid, 'show'], env)
    expect(closed.code, closed.stderr).toBe(0)
    expect(closed.stdout).toBe(`${sid}/show was closed\n`)
    // Both followers end by themselves with the terminal's output, having seen all of it.
    expect((await follower.exited).code).toBe(0)
    expect(follower.stdout()).toBe('READY\r\nhéllo ✓\r\nhéllo ✓\r\nlater')
    expect((await watcher.exited).code).toBe(0)
    await waitFor(async () => (await client.terminal(sid, 'show')).state === 'retired', 20_000, 'the terminal to retire')

    const displayOnly = await token(['terminals:display'])
    const [again, retired, badAfter, beyond, noGrant, oneArg, screenGone] = await Promise.all([
      runCli(['close', sid, 'show', '--json'], env),
      runCli(['output', sid, 'show'], env),
      runCli(['output', sid, 'show', '--after', 'abc'], env),
      runCli(['output', sid, 'no-such-terminal'], env),
      runCli(['screen', sid, 'show'], { ...env, TERMKEEP_TOKEN: displayOnly }),
      runCli(['screen', sid], env),
      runCli(['close', sid, 'no-such-terminal'], env),
    ])
    expect(again.code, again.stderr).toBe(0) // closing again succeeds
    expect(JSON.parse(again.stdout)).toMatchObject({ closed: true, info: { state: 'retired' } })
    expectRefused(retired, 'terminal/unavailable')
    expectUsage(badAfter)
    expectRefused(beyond, 'terminal/not-found')
    expectRefused(noGrant, 'auth/forbidden')
    expectUsage(oneArg)
    expectRefused(screenGone, 'terminal/not-found')
  })

  it('token ls and revoke, for admins only', async () => {
    const victim = await createToken(stack.storage.db, { name: 'victim', grants: ['workspaces:read'], sessions: 'all' })
    const nonAdmin = await token(['workspaces:read'])
    const [listed, asJson, refused] = await Promise.all([
      runCli(['token', 'ls'], env),
      runCli(['token', 'ls', '--json'], env),
      runCli(['token', 'ls'], { ...env, TERMKEEP_TOKEN: nonAdmin }),
    ])
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout).toMatch(new RegExp(`^${victim.token.id}  victim  all sessions  grants: workspaces:read  created \\d{4}-`, 'm'))
    expect(listed.stdout).not.toContain(victim.secret)
    expect(JSON.parse(asJson.stdout).tokens.map((t: any) => t.id)).toContain(victim.token.id)
    expectRefused(refused, 'auth/forbidden')
    const revoked = await runCli(['token', 'revoke', victim.token.id], env)
    expect(revoked.stdout).toBe(`revoked token ${victim.token.id}\n`)
    const [useRevoked, revokeAgain, noId, frob] = await Promise.all([
      runCli(['ls'], { ...env, TERMKEEP_TOKEN: victim.secret }),
      runCli(['token', 'revoke', victim.token.id], env),
      runCli(['token', 'revoke'], env),
      runCli(['token', 'frob'], env),
    ])
    expect(useRevoked.stderr).toContain('the server refused the token (auth/invalid-token)')
    expectRefused(revokeAgain, 'token/not-found')
    expectUsage(noId)
    expectUsage(frob)
  })

  it('prints the usage of each command for --help and exits 0', async () => {
    const commands = ['workspace', 'send', 'screen', 'output', 'close', 'token ls']
    const results = await Promise.all(commands.map((command) => runCli([...command.split(' '), '--help'])))
    results.forEach((result, i) => {
      expect(result.code, commands[i]).toBe(0)
      expect(result.stdout).toMatch(new RegExp(`^usage: termkeep ${commands[i]}`))
      expect(result.stderr).toBe('')
    })
  })
})
