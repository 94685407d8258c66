/** The client commands' one-line messages for an unreachable server, a bad token, bad usage. */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startStack, type Stack } from '../browser/stack.ts'
import { freePort } from '../support/ports.ts'

const BIN = fileURLToPath(new URL('../../cli/bin.js', import.meta.url))

function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, TERMKEEP_URL: '', TERMKEEP_TOKEN: '', ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    )
  })
}

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
    const result = await run(['ls'], { TERMKEEP_URL: `http://127.0.0.1:${port}`, TERMKEEP_TOKEN: 'whatever' })
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain(`cannot reach the termkeep server at http://127.0.0.1:${port} (ECONNREFUSED)`)
  })

  it('says the token was refused, in one line', async () => {
    const result = await run(['ls', '--url', stack.api.url, '--token', 'tk_wrong'], {})
    expect(result.code).toBe(1)
    expect(result.stderr.trim()).toBe('termkeep: the server refused the token (auth/invalid-token); check --token or TERMKEEP_TOKEN')
  })

  it('asks for a token when none is given', async () => {
    const result = await run(['display', 's', 't'], { TERMKEEP_URL: stack.api.url })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('no token: pass --token or set TERMKEEP_TOKEN')
  })

  it('refuses to mint an admin token bound to some sessions, before touching the database', async () => {
    const result = await run(['token', 'create', '--grant', 'admin', '--session', 's1'], { TERMKEEP_DATA_DIR: '/nonexistent/termkeep-data' })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr.trim()).toBe('termkeep: the admin grant manages every token: give it only with sessions "all" (drop --session)')
  })

  it('lists workspaces, sessions and terminals', async () => {
    const env = { TERMKEEP_URL: stack.api.url, TERMKEEP_TOKEN: stack.token }
    expect((await run(['ls'], env)).stdout).toContain('no workspaces')
    const headers = { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' }
    await fetch(`${stack.api.url}/v1/workspaces`, { method: 'POST', headers, body: JSON.stringify({ path: stack.workspaceDir }) })
    const created = await fetch(`${stack.api.url}/v1/sessions`, { method: 'POST', headers, body: JSON.stringify({ cwd: stack.workspaceDir, title: 'build' }) })
    const { session } = (await created.json()) as { session: { id: string } }
    const result = await run(['ls'], env)
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(stack.workspaceDir)
    expect(result.stdout).toContain(`session ${session.id}  "build"`)
  })
})
