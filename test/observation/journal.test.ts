/**
 * The seed's flow on real processes in a real PTY: the fake agent runs in a termkeep terminal with
 * its own HOME; an observer token reads the context, the process tree, open files and declared
 * variables, discovers the journal (resolveHomeDirectory → listDirectory → entries.at(-1)) and
 * follows it through appends, a truncate, a rotation and an atomic replace — every byte exactly
 * once, in order. Then the foreground switching with `sleep` and `cat`, in the context, in the
 * terminal's info and in `termkeep ps`.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { psCommand } from '../../cli/ps.ts'
import { remoteTokenCommand } from '../../cli/token-remote.ts'
import { OBSERVE_MAX_FOLLOW_CHUNK_BYTES } from '../../schema/limits.ts'
import { waitFor } from '../support/ports.ts'
import { Observation, type EventStream } from './support.ts'

let o: Observation
let observer: string
let home: string
const DATE = '2025-03-04'
const journal = () => join(home, '.fakeagent', 'sessions', DATE, 'abc.jsonl')

beforeAll(async () => {
  // The sidecar's own value of a variable the agent also has: observation must never answer it.
  o = await Observation.start('journal', { FAKEAGENT_SECRET: 'the-sidecar-value' })
  observer = await o.observer(
    ['observe:process', 'observe:files', 'observe:journal'],
    ['FAKEAGENT_DATA', 'FAKEAGENT_SECRET', 'SIDECAR_SECRET'],
  )
  await o.terminal('t1')
  await o.foreground('t1', observer, 'bash')
  home = await o.startAgent('t1', observer, 'abc', { env: 'FAKEAGENT_SECRET=the-agent-value', args: `--date ${DATE}` })
}, 60_000)
afterAll(async () => {
  await o?.stop()
})

describe('tokens', () => {
  it('store the declared names in their own table, list them, and refuse bad ones', async () => {
    const listed = await o.call('GET', '/v1/tokens')
    const mine = listed.body.tokens.find((t: any) => t.name === 'observer')
    expect(mine.observeEnvironment).toEqual(['FAKEAGENT_DATA', 'FAKEAGENT_SECRET', 'SIDECAR_SECRET'])
    const rows = await o.stack.storage.client.execute({
      sql: 'SELECT name FROM token_observe_env WHERE token_id = ? ORDER BY name',
      args: [mine.id],
    })
    expect(rows.rows.map((r) => r.name)).toEqual(['FAKEAGENT_DATA', 'FAKEAGENT_SECRET', 'SIDECAR_SECRET'])
    let listing = ''
    const out = { write: (chunk: string) => ((listing += chunk), true) } as unknown as NodeJS.WritableStream
    expect(await remoteTokenCommand(['ls', '--url', o.stack.api.url, '--token', o.stack.token], out)).toBe(0)
    expect(listing).toMatch(new RegExp(`^${mine.id}  observer .* observes: FAKEAGENT_DATA, FAKEAGENT_SECRET, SIDECAR_SECRET  created`, 'm'))
    for (const observeEnvironment of [['lower'], ['A=B'], [42], 'HOME', Array.from({ length: 33 }, (_, i) => `V${i}`)]) {
      const bad = await o.call('POST', '/v1/tokens', {
        json: { name: 'x', grants: ['observe:process'], sessions: 'all', observeEnvironment },
      })
      expect([bad.status, bad.body.error.code], JSON.stringify(observeEnvironment)).toEqual([400, 'request/invalid'])
    }
  })

  it('are minted by `termkeep token create --observe-env`', async () => {
    const bin = fileURLToPath(new URL('../../cli/bin.js', import.meta.url))
    const env = { ...process.env, TERMKEEP_DATA_DIR: o.stack.sidecar.dataDir, DATABASE_URL: o.stack.sidecar.databaseUrl }
    const args = [bin, 'token', 'create', '--grant', 'observe:process', '--session', o.sid, '--observe-env', 'FAKEAGENT_DATA']
    const minted = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
      execFile(process.execPath, args, { env }, (error, stdout, stderr) =>
        error ? reject(new Error(stderr)) : resolve({ stdout, stderr }),
      ),
    )
    expect(minted.stderr).toContain('observes FAKEAGENT_DATA')
    const token = minted.stdout.trim()
    const declared = await o.observe('t1', 'processes/environment', token, { names: ['FAKEAGENT_DATA'] })
    expect(declared.body.environment).toEqual({ FAKEAGENT_DATA: `${home}/.fakeagent` })
    expect((await o.observe('t1', 'processes/environment', token, { names: ['FAKEAGENT_SECRET'] })).status).toBe(403)
    const refused = await new Promise<string>((resolve) =>
      execFile(process.execPath, [...args.slice(0, -1), 'bad-name'], { env }, (_e, _o, stderr) => resolve(stderr)),
    )
    expect(refused).toContain('is not an environment variable name')
  })
})

describe('context and processes', () => {
  it('names the foreground process, proves the tty, and gives the capabilities of the grants', async () => {
    const { body } = await o.context('t1', observer)
    expect(body.foreground.executableName).toBe('node')
    expect(body.foreground.arguments).toContain('abc')
    expect(Date.parse(body.foreground.startedAt)).toBeGreaterThan(Date.now() - 120_000)
    expect(body.tty.deviceName).toMatch(/^pts\/\d+$/)
    expect(body.tty.deviceId).toMatch(/^13[6-9]:\d+$|^14[0-3]:\d+$/)
    expect(body.capabilities.sort()).toEqual(['agent-journal', 'filesystem-observation', 'process-observation'])
    for (const key of ['terminal', 'project', 'environment', 'process']) expect(Object.keys(body[key])).toEqual(['id'])
    const journalOnly = await o.observer(['observe:journal'])
    expect((await o.context('t1', journalOnly)).body.capabilities).toEqual(['agent-journal'])
  })

  it('lists the process tree with the agent under the shell, in the foreground', async () => {
    const { body } = await o.observe('t1', 'processes/descendants', observer, {})
    const [shell, ...rest] = body.processes
    expect(shell.executableName).toBe('bash')
    const agent = rest.find((p: any) => p.executableName === 'node')
    expect(agent).toMatchObject({ parentPid: shell.pid, foreground: true, cwd: '~' })
    expect(agent.arguments).toEqual(expect.arrayContaining(['--id', 'abc']))
    expect(shell.foreground).toBe(false)
    expect(body.truncated).toBe(false)
  })

  it('reports the files the agent holds open, with display paths beneath its home', async () => {
    const { body: tree } = await o.observe('t1', 'processes/descendants', observer, {})
    const agent = tree.processes.find((p: any) => p.executableName === 'node')
    const writable = await o.observe('t1', 'processes/openFiles', observer, { processes: [agent], access: 'writable' })
    expect(writable.status).toBe(200)
    expect(writable.body.files).toEqual([
      { handle: { id: expect.any(String) }, path: `~/.fakeagent/sessions/${DATE}/abc.jsonl`, access: 'writable' },
    ])
    const readable = await o.observe('t1', 'processes/openFiles', observer, { processes: [agent.handle], access: 'readable' })
    expect(readable.body.files.map((f: any) => f.path)).toEqual(['~/.fakeagent/config.json'])
    // The handle from openFiles reads the journal.
    const read = await o.observe('t1', 'files/read', observer, { handle: writable.body.files[0].handle, maxBytes: 4096 })
    expect(Buffer.from(read.body.data, 'base64').toString()).toContain('"type":"session"')
  })

  it("answers declared variables from the observed process, never the sidecar's own environment", async () => {
    const { body } = await o.observe('t1', 'processes/environment', observer, {
      names: ['FAKEAGENT_DATA', 'FAKEAGENT_SECRET', 'SIDECAR_SECRET'],
    })
    expect(body.environment).toEqual({ FAKEAGENT_DATA: `${home}/.fakeagent`, FAKEAGENT_SECRET: 'the-agent-value' })
    const undeclared = await o.observe('t1', 'processes/environment', observer, { names: ['FAKEAGENT_DATA', 'HOME'] })
    expect([undeclared.status, undeclared.body.error.code, undeclared.body.error.names]).toEqual([403, 'observe/undeclared', ['HOME']])
  })
})

describe('discover journal files, then follow the newest', () => {
  let stream: EventStream
  /** What the follower believes the file holds. */
  let copy = Buffer.alloc(0)
  const seen: string[] = []

  async function until(predicate: () => boolean, what: string): Promise<void> {
    while (!predicate()) {
      const event = await stream.next()
      if (!event) throw new Error(`follow ended before ${what}`)
      seen.push(event.event)
      const bytes = Buffer.from(event.data.bytes, 'base64')
      expect(bytes.length, 'the host lowers a larger maxChunkBytes').toBeLessThanOrEqual(OBSERVE_MAX_FOLLOW_CHUNK_BYTES)
      if (event.event === 'append') {
        expect(event.data.offset, 'appends continue exactly where the copy ends').toBe(copy.length)
        copy = Buffer.concat([copy, bytes])
      } else {
        expect(event.data.offset).toBe(0)
        copy = bytes
      }
    }
  }
  /** The complete lines so far (a chunk may end inside one). */
  const lines = () =>
    copy
      .toString()
      .split('\n')
      .slice(0, -1)
      .map((l) => JSON.parse(l))

  it('resolves the home directory, lists .jsonl files oldest first, and follows entries.at(-1)', async () => {
    // An older session of the same agent, and files that must never be listed.
    const older = join(home, '.fakeagent', 'sessions', '2025-01-01')
    await o.type('t1', 'say hello\r')
    await waitFor(async () => readFileSync(journal(), 'utf8').includes('hello'), 10_000, 'hello in the journal')
    writeFileSync(join(home, '.fakeagent', 'sessions', 'notes.txt'), 'not a journal')
    mkdirSync(older, { recursive: true })
    writeFileSync(join(older, 'old.jsonl'), '{"n":1}\n')
    utimesSync(join(older, 'old.jsonl'), new Date('2025-01-01'), new Date('2025-01-01'))

    const root = await o.observe('t1', 'files/resolveHomeDirectory', observer, { relativePath: '.fakeagent/sessions' })
    expect(root.body.handle.id).toEqual(expect.any(String))
    const files = await o.observe('t1', 'files/listDirectory', observer, {
      root: root.body.handle,
      extensions: ['.jsonl'],
      maxDepth: 2,
      maxEntries: 100,
      maxBytes: 5_000_000,
    })
    expect(files.status).toBe(200)
    expect(files.body.entries.map((e: any) => e.relativePath)).toEqual(['2025-01-01/old.jsonl', `${DATE}/abc.jsonl`])
    expect(files.body.truncated).toBe(false)
    const newest = files.body.entries.at(-1)
    expect(newest.size).toBe(readFileSync(journal()).length)

    // Limits that cannot hold both keep the newest and say so.
    const one = await o.observe('t1', 'files/listDirectory', observer, {
      root: root.body.handle,
      extensions: ['.jsonl'],
      maxDepth: 2,
      maxEntries: 1,
      maxBytes: 5_000_000,
    })
    expect([one.body.entries.map((e: any) => e.relativePath), one.body.truncated]).toEqual([[`${DATE}/abc.jsonl`], true])
    const shallow = await o.observe('t1', 'files/listDirectory', observer, {
      root: root.body.handle,
      extensions: ['.jsonl'],
      maxDepth: 0,
      maxEntries: 10,
      maxBytes: 5_000_000,
    })
    expect(shallow.body.entries).toEqual([])

    stream = await o.stream(
      `${o.terminalPath('t1')}/observation/files/follow?handle=${encodeURIComponent(newest.handle.id)}&maxChunkBytes=1000000`,
      observer,
    )
    await until(() => lines().some((r) => r.text === 'hello'), 'the records written so far')
    expect(lines().map((r) => r.type)).toEqual(['session', 'message'])
  })

  it('receives every appended line exactly once and in order (in chunks the host lowered)', async () => {
    await o.type('t1', 'burst 3000\r')
    await until(() => lines().length >= 3002, '3000 more records')
    expect(lines().map((r) => r.n)).toEqual(Array.from({ length: 3002 }, (_, i) => i + 1))
    expect(copy.equals(readFileSync(journal()))).toBe(true)
  })

  it('says truncate when the journal is cut, then appends again from its start', async () => {
    await o.type('t1', 'truncate\r')
    await o.type('t1', 'say after truncate\r')
    await until(() => seen.includes('truncate') && lines().some((r) => r.text === 'after truncate'), 'the truncate and the next record')
    expect(lines().map((r) => r.text)).toEqual(['after truncate'])
    expect(copy.equals(readFileSync(journal()))).toBe(true)
  })

  it('says replace after a rotation, and after an atomic rename over the journal', async () => {
    const before = seen.length
    await o.type('t1', 'say last words\r')
    await o.type('t1', 'rotate\r')
    await until(() => seen.slice(before).includes('replace') && lines().some((r) => r.text === 'abc rotated'), 'the rotation')
    // What was written before the rotation arrived first, as appends.
    expect(seen.slice(before, seen.indexOf('replace', before))).toContain('append')
    expect(copy.equals(readFileSync(journal()))).toBe(true)
    expect(readFileSync(`${journal()}.1`, 'utf8')).toContain('last words')

    const mark = seen.length
    await o.type('t1', 'replace\r')
    await o.type('t1', 'say in the new file\r')
    await until(() => seen.slice(mark).includes('replace') && lines().some((r) => r.text === 'in the new file'), 'the replacement')
    expect(lines().map((r) => r.text)).toEqual(['abc replaced', 'in the new file'])
    expect(copy.equals(readFileSync(journal()))).toBe(true)
    stream.close()
  })
})

describe('the foreground program', () => {
  it('switches to sleep and cat and back, in the context, the terminal info and termkeep ps', async () => {
    await o.type('t1', 'exit\r')
    await o.foreground('t1', observer, 'bash')
    const info = async (name: string) =>
      waitFor(async () => (await o.call('GET', o.terminalPath('t1'))).body.foregroundCommand === name, 20_000, `info says ${name}`)
    await info('bash')

    await o.type('t1', 'sleep 300\r')
    const sleeping = await o.foreground('t1', observer, 'sleep')
    expect(sleeping.foreground.arguments).toEqual(['300'])
    await info('sleep')

    let text = ''
    const out = { write: (chunk: string) => ((text += chunk), true) } as unknown as NodeJS.WritableStream
    const args = [o.sid, 't1', '--url', o.stack.api.url, '--token', observer]
    expect(await psCommand(args, out)).toBe(0)
    expect(text).toMatch(/^foreground: sleep \(pid \d+\)$/m)
    // The shell as started: with termkeep's shell integration (docs/commands.md).
    expect(text).toMatch(/^\s*\d+ S\s+\S+\s+bash --init-file \S+\/termkeep\.bash$/m)
    expect(text).toMatch(/^\s*\d+ S\+\s+\S+\s+ \\_ sleep 300$/m)
    text = ''
    expect(await psCommand([...args, '--json'], out)).toBe(0)
    const listed = JSON.parse(text)
    expect(listed.foreground.executableName).toBe('sleep')
    expect(listed.processes.map((p: any) => p.executableName)).toEqual(['bash', 'sleep'])

    await o.type('t1', '\x03')
    await o.foreground('t1', observer, 'bash')
    await o.type('t1', 'cat\r')
    await o.foreground('t1', observer, 'cat')
    await info('cat')
    await o.type('t1', '\x04')
    await o.foreground('t1', observer, 'bash')
    await info('bash')
  })
})
