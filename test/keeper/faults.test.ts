/**
 * The keeper's channel under faults, with real keeper processes: one keeper per data directory (a
 * second refuses in one line); a stranger cannot drive it (another user is stopped by the modes,
 * a process of the same user without the secret by the proof); a removed or replaced socket file
 * is noticed and taken back, and a client tells an impostor at the path from the keeper; a keeper
 * speaking another protocol version is refused in one line that says what to do.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer, connect, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KeeperClient, KeeperRefused } from '../../local/keeper/client.ts'
import { FrameReader, jsonFrame, parseJson } from '../../local/keeper/frames.ts'
import { keeperPaths } from '../../local/keeper/paths.ts'
import { proofOf, readSecret } from '../../local/keeper/proof.ts'
import { KEEPER_PROTOCOL } from '../../local/keeper/protocol.ts'
import { reachKeeper } from '../../local/keeper/start.ts'
import { waitFor } from '../support/ports.ts'
import { startSidecar } from '../support/sidecar.ts'
import { keeperPid, stopKeeper, watchKeeper } from '../support/keepers.ts'

const ENTRY = new URL('../../keeper/main.ts', import.meta.url).pathname
const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-keeper-faults-'))
const paths = keeperPaths(dataDir)
const software = 'test'
const log = () => readFileSync(paths.log, 'utf8')

beforeAll(async () => {
  watchKeeper(dataDir)
  ;(await reachKeeper(dataDir, { role: 'control', software, start: true })).close()
})
afterAll(async () => {
  await stopKeeper(dataDir)
  rmSync(dataDir, { recursive: true, force: true })
})

/** A control connection's list (the keeper answers). */
async function answers(): Promise<boolean> {
  const client = await KeeperClient.connect(paths, { role: 'control', software, timeoutMs: 5_000 })
  try {
    return Array.isArray(await client.request('list', {}))
  } finally {
    client.close()
  }
}

describe('the keeper', () => {
  it('is one per data directory: a second refuses to start, in one line', () => {
    const first = keeperPid(dataDir)!
    const second = spawnSync(process.execPath, ['--import', 'tsx', ENTRY, dataDir], { encoding: 'utf8', timeout: 30_000 })
    expect(second.status).toBe(1)
    const lines = second.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(new RegExp(`termkeep keeper: another keeper \\(pid ${first}\\) keeps ${dataDir}; this one stops$`))
    expect(keeperPid(dataDir)).toBe(first)
  })

  it('keeps its directory and socket to its user (0700, 0600)', () => {
    expect(statSync(paths.dir).mode & 0o777).toBe(0o700)
    expect(statSync(paths.socket).mode & 0o777).toBe(0o600)
    expect(statSync(paths.secret).mode & 0o777).toBe(0o600)
  })

  const setpriv = spawnSync('setpriv', ['--version']).status === 0 && process.getuid?.() === 0
  it.skipIf(!setpriv)("refuses another user's process, even with the directories opened to it (the socket's own mode)", () => {
    const probe = `const s = require('node:net').connect(${JSON.stringify(paths.socket)}); s.on('connect', () => { console.log('connected'); process.exit(0) }); s.on('error', (e) => { console.log(e.code); process.exit(0) })`
    const asNobody = () =>
      execFileSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', probe], {
        encoding: 'utf8',
      }).trim()
    expect(asNobody()).toBe('EACCES')
    chmodSync(dataDir, 0o755)
    chmodSync(paths.dir, 0o755)
    try {
      expect(asNobody()).toBe('EACCES')
      // (what refuses it there: the socket's mode, which this probe can get past once opened)
      chmodSync(paths.socket, 0o666)
      expect(asNobody()).toBe('connected')
      chmodSync(paths.socket, 0o600)
    } finally {
      chmodSync(paths.dir, 0o700)
      chmodSync(dataDir, 0o700)
    }
  })

  it('refuses a process of the same user that cannot prove it holds the secret, and goes on serving', async () => {
    const before = log().length
    const socket = connect(paths.socket)
    const reader = new FrameReader()
    const said: Array<{ type: string; reason?: string }> = []
    socket.on('data', (chunk: Buffer) =>
      reader.push(chunk, (frame) => {
        const message = parseJson(frame.payload) as { type: string; nonce?: string }
        said.push(message)
        if (message.type === 'welcome')
          socket.write(jsonFrame({ type: 'auth', proof: proofOf(Buffer.alloc(32, 7), 'client', message.nonce!, 'n') }))
      }),
    )
    const closed = new Promise((resolve) => socket.once('close', resolve))
    socket.write(jsonFrame({ type: 'hello', protocols: [KEEPER_PROTOCOL], role: 'sidecar', nonce: 'n', software: 'stranger' }))
    await closed
    expect(said.map((m) => m.type)).toEqual(['welcome', 'refused'])
    expect(log().slice(before)).toContain('refused a connection that did not prove it holds the keeper secret')
    // Garbage is dropped too, and the keeper stays up for everyone else.
    const garbage = connect(paths.socket)
    await new Promise((resolve) => garbage.once('connect', resolve))
    garbage.write(Buffer.from([0xff, 0xff, 0xff, 0x7f, 1, 2, 3]))
    await new Promise((resolve) => garbage.once('close', resolve))
    expect(await answers()).toBe(true)
  })

  it('notices its socket removed, says so and listens again', async () => {
    const before = log().length
    rmSync(paths.socket)
    await waitFor(
      async () => log().slice(before).includes(`the keeper's socket ${paths.socket} was removed; listening there again`),
      10_000,
      'the keeper to notice',
    )
    await waitFor(async () => answers().catch(() => false), 10_000, 'the keeper to answer again')
  })

  it('notices its socket replaced by an impostor; a client refuses the impostor; the keeper takes its path back', async () => {
    const before = log().length
    rmSync(paths.socket)
    // An impostor answers the handshake with a proof it cannot make.
    const impostor: Server = createServer((socket) => {
      const reader = new FrameReader()
      socket.on('data', (chunk: Buffer) =>
        reader.push(chunk, () =>
          socket.write(
            jsonFrame({
              type: 'welcome',
              protocol: KEEPER_PROTOCOL,
              nonce: 'x',
              proof: '00'.repeat(32),
              keeper: { pid: 1, startTicks: null, bootId: null, software: 'fake', startedAt: 0 },
            }),
          ),
        ),
      )
    })
    await new Promise<void>((resolve) => impostor.listen(paths.socket, resolve))
    try {
      const refused = await KeeperClient.connect(paths, { role: 'sidecar', software, timeoutMs: 5_000 }).then(
        () => undefined,
        (error: Error) => error,
      )
      expect(refused).toBeInstanceOf(KeeperRefused)
      expect((refused as KeeperRefused).why).toBe('impostor')
      expect(refused!.message).toContain("did not prove it is this data directory's keeper (was the socket replaced?)")
      await waitFor(
        async () => log().slice(before).includes('was replaced by another file; listening there again'),
        10_000,
        'the keeper to notice',
      )
      await waitFor(async () => answers().catch(() => false), 10_000, 'the keeper to answer again')
    } finally {
      impostor.close()
    }
  })
})

describe('a keeper speaking another protocol version', () => {
  it('is refused by the sidecar in one line that says what to do', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'termkeep-keeper-version-'))
    const other = keeperPaths(dir)
    // A keeper of another release (protocol 99): it proves it holds the secret, and says its version.
    watchKeeper(dir)
    ;(await reachKeeper(dir, { role: 'control', software, start: true })).close()
    const secret = readSecret(other.secret)
    await stopKeeper(dir)
    const future = createServer((socket) => {
      const reader = new FrameReader()
      socket.on('data', (chunk: Buffer) =>
        reader.push(chunk, (frame) => {
          const hello = parseJson(frame.payload) as { nonce: string }
          const nonce = 'f'.repeat(32)
          const keeper = { pid: process.pid, startTicks: null, bootId: null, software: '9.0.0', startedAt: Date.now() }
          socket.write(jsonFrame({ type: 'welcome', protocol: 99, nonce, proof: proofOf(secret, 'keeper', hello.nonce, nonce), keeper }))
        }),
      )
    })
    await new Promise<void>((resolve) => future.listen(other.socket, resolve))
    try {
      const refused = await startSidecar({ dataDir: dir }).then(
        () => 'started',
        (error: Error) => error.message,
      )
      const lines = refused.split('\n').slice(1).filter(Boolean)
      expect(lines).toEqual([
        `termkeep sidecar: the keeper running for this data directory (pid ${process.pid}, termkeep 9.0.0) speaks keeper protocol 99; this termkeep speaks ${KEEPER_PROTOCOL}. Its terminals keep running; to use this release, end them with \`termkeep stop --terminals\` and start again`,
      ])
    } finally {
      future.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
