/**
 * With the product's default data directory (`./data`, relative to where termkeep starts), a
 * shell started in another directory still finds its integration's nonce file: commands are
 * recorded and run. (The nonce file's path was relative, so the shell, in its own cwd, did not.)
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../support/ports.ts'
import { type RunningSidecar, startSidecar } from '../support/sidecar.ts'
import { insertSession, SidecarHttp } from '../support/terminals.ts'

const root = mkdtempSync(join(tmpdir(), 'termkeep-reldata-'))
let sidecar: RunningSidecar | undefined

afterAll(async () => {
  await sidecar?.stop()
  rmSync(root, { recursive: true, force: true })
})

describe('shell integration with the default ./data', () => {
  it('runs a command in a shell whose cwd is elsewhere', async () => {
    const elsewhere = join(root, 'project')
    mkdirSync(elsewhere)
    sidecar = await startSidecar({ defaultLocations: true, cwd: root })
    const http = new SidecarHttp(sidecar)
    await insertSession(sidecar.databaseUrl, 's1', elsewhere)
    const path = '/v1/sessions/s1/terminals/t1'
    expect((await http.json('PUT', path, { json: { cols: 80, rows: 24, shell: '/bin/bash' } })).status).toBe(201)
    let answer: { status: number; body: any } | undefined
    await waitFor(
      async () => {
        answer = await http.json('POST', `${path}/commands`, { json: { command: 'echo marked', timeoutMs: 10_000 } })
        return answer.status === 200
      },
      20_000,
      'a command at the prompt',
    ).catch(() => {
      throw new Error(`never at a prompt: ${JSON.stringify(answer?.body)}`)
    })
    expect(answer!.body).toMatchObject({ ended: true, exitCode: 0, text: 'marked' })
  })
})
