/**
 * The client commands' one-line messages for an unreachable server, a bad token, bad usage, and a
 * server that is not termkeep (real sockets that answer HTML, hang up, or never answer).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStorage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startStack, type Stack } from '../browser/stack.ts'
import { freePort, listenLoopback } from '../support/ports.ts'
import { runCli } from './run.ts'

describe('termkeep client commands: messages', () => {
  let stack: Stack
  beforeAll(async () => {
    stack = await startStack('cli-messages')
  })
  afterAll(async () => {
    await stack?.stop()
  })

  it('says the server is unreachable, in one line', async () => {
    const port = await freePort()
    const result = await runCli(['ls'], { TERMKEEP_URL: `http://127.0.0.1:${port}`, TERMKEEP_TOKEN: 'whatever' })
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain(`cannot reach the termkeep server at http://127.0.0.1:${port} (ECONNREFUSED)`)
  })

  it('says the token was refused, in one line', async () => {
    const result = await runCli(['ls', '--url', stack.api.url, '--token', 'tk_wrong'], {})
    expect(result.code).toBe(1)
    expect(result.stderr.trim()).toBe('termkeep: the server refused the token (auth/invalid-token); check --token or TERMKEEP_TOKEN')
  })

  it('asks for a token when none is given', async () => {
    const result = await runCli(['display', 's', 't'], { TERMKEEP_URL: stack.api.url })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('no token: pass --token or set TERMKEEP_TOKEN')
  })

  it('refuses to mint an admin token bound to some sessions, before touching the database', async () => {
    const result = await runCli(['token', 'create', '--grant', 'admin', '--session', 's1'], {
      TERMKEEP_DATA_DIR: '/nonexistent/termkeep-data',
    })
    expect(result.code).toBe(2) // a usage error
    expect(result.stdout).toBe('')
    expect(result.stderr.trim()).toBe('termkeep: the admin grant manages every token: give it only with sessions "all" (drop --session)')
  })

  it('mints a token only into an existing database, and says which', async () => {
    const missing = await runCli(['token', 'create', '--grant', 'workspaces:read'], { TERMKEEP_DATA_DIR: '/nonexistent/termkeep-data' })
    expect(missing.code).toBe(1)
    expect(missing.stdout).toBe('')
    expect(missing.stderr.trim()).toBe(
      "termkeep: no termkeep database at /nonexistent/termkeep-data/termkeep.db; run this where `npm start` runs, or set TERMKEEP_DATA_DIR (or DATABASE_URL) to the server's",
    )
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-token-'))
    const storage = await openStorage({ url: `file:${join(dataDir, 'termkeep.db')}` })
    await migrate(storage.client)
    storage.close()
    const minted = await runCli(['token', 'create', '--grant', 'workspaces:read', '--name', 'reader'], { TERMKEEP_DATA_DIR: dataDir })
    expect(minted.code, minted.stderr).toBe(0)
    expect(minted.stdout).toMatch(/^tk_\S+\n$/)
    expect(minted.stderr).toContain(`(in ${join(dataDir, 'termkeep.db')})`)
  })

  it('lists workspaces, sessions and terminals', async () => {
    const env = { TERMKEEP_URL: stack.api.url, TERMKEEP_TOKEN: stack.token }
    expect((await runCli(['ls'], env)).stdout).toContain('no workspaces')
    const headers = { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' }
    await fetch(`${stack.api.url}/v1/workspaces`, { method: 'POST', headers, body: JSON.stringify({ path: stack.workspaceDir }) })
    const created = await fetch(`${stack.api.url}/v1/sessions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ cwd: stack.workspaceDir, title: 'build' }),
    })
    const { session } = (await created.json()) as { session: { id: string } }
    const result = await runCli(['ls'], env)
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(stack.workspaceDir)
    expect(result.stdout).toContain(`session ${session.id}  "build"`)
  })

  it.each(['ls', 'attach', 'display'])('prints the usage of `%s --help` and exits 0', async (command) => {
    const result = await runCli([command, '--help'], {})
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(new RegExp(`^usage: termkeep ${command}`))
    expect(result.stdout).toContain('--url URL')
    expect(result.stderr).toBe('')
  })

  it('exits 2 for every kind of wrong usage, with one line', async () => {
    const env = { TERMKEEP_URL: stack.api.url, TERMKEEP_TOKEN: stack.token }
    // (`attach NAME` alone is a target: a session's newest terminal, docs/cli.md#targets.)
    for (const args of [['ls', '--bogus'], ['attach', 'a', 'b', 'c'], ['display'], ['display', 's', 't', '--colour'], ['frobnicate']]) {
      const result = await runCli(args, env)
      expect(result.code, args.join(' ')).toBe(2)
      expect(result.stderr.split('\n')[0], args.join(' ')).toMatch(/^termkeep: /)
    }
    expect((await runCli(['attach', 'a', 'b', 'c'], env)).stderr.trim().split('\n')).toHaveLength(1)
  })

  describe('pointed at a server that is not termkeep', () => {
    const servers: Server[] = []
    const sockets = new Set<Socket>()
    async function listen(server: Server): Promise<string> {
      servers.push(server)
      server.on('connection', (socket) => (sockets.add(socket), socket.once('close', () => sockets.delete(socket))))
      return listenLoopback(server)
    }
    afterAll(async () => {
      for (const socket of sockets) socket.destroy()
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
    })

    it('says a web page is not a termkeep server, for plain requests and streams', async () => {
      const url = await listen(
        createHttpServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>')),
      )
      for (const args of [['ls'], ['display', 's', 't']]) {
        const result = await runCli(args, { TERMKEEP_URL: url, TERMKEEP_TOKEN: 'whatever' })
        expect(result.code, args[0]).toBe(1)
        expect(result.stderr.trim().split('\n'), args[0]).toHaveLength(1)
        expect(result.stderr, args[0]).toContain(`termkeep: ${url} is not a termkeep server (it answered 200 with text/html)`)
      }
      const notFound = await listen(
        createHttpServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>nope</h1>')),
      )
      const result = await runCli(['ls'], { TERMKEEP_URL: notFound, TERMKEEP_TOKEN: 'whatever' })
      expect(result.code).toBe(1)
      expect(result.stderr.trim()).toContain(`${notFound} is not a termkeep server (it answered 404 Not Found)`)
    })

    it('fails, never exits 0 silently, when the server hangs up without answering', async () => {
      const url = await listen(createServer((socket) => socket.destroy()))
      const result = await runCli(['ls'], { TERMKEEP_URL: url, TERMKEEP_TOKEN: 'whatever' })
      expect(result.code).toBe(1)
      expect(result.stdout).toBe('')
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
      expect(result.stderr).toMatch(/^termkeep: .*(closed the connection|cannot reach)/)
    })

    it('gives up on a server that never answers', async () => {
      const url = await listen(createServer(() => {}))
      const started = Date.now()
      const result = await runCli(['ls', '--request-timeout', '1'], { TERMKEEP_URL: url, TERMKEEP_TOKEN: 'whatever' })
      expect(result.code).toBe(1)
      expect(result.stderr.trim()).toBe(
        `termkeep: no answer from ${url} within 1 s; is it a termkeep server? (--request-timeout sets the wait)`,
      )
      expect(Date.now() - started).toBeLessThan(15_000)
    })
  })
})
