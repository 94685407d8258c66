/**
 * Nothing on a pseudo filesystem is ever handed out (sidecar/files/pseudo-fs.ts), on a real
 * stack: an observed process whose HOME (or a declared variable) is `/proc/self`, the sidecar's
 * `/proc/<pid>`, `/sys/kernel` or `/dev` gets no root there — the sidecar would resolve
 * `/proc/self` to its own entry, whose `environ` holds its secret — and a workspace registered
 * at `/proc/<sidecar pid>` serves none of it. The same roots on ordinary directories still work.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Observation } from './support.ts'

let o: Observation
let observer: string
let sidecarPid: number
let real: string

const files = (tid: string, op: string, json: unknown) => o.observe(tid, `files/${op}`, observer, json)

/** A terminal whose foreground process runs with these variables (it only sleeps). */
async function observedWith(tid: string, env: string, redirect = ''): Promise<void> {
  await o.terminal(tid)
  await o.type(tid, `${env} exec sleep 300 ${redirect}\r`)
  await o.foreground(tid, observer, 'sleep')
}

beforeAll(async () => {
  o = await Observation.start('pseudo-fs')
  sidecarPid = o.stack.sidecar.pid
  observer = await o.observer(['observe:process', 'observe:files', 'observe:journal'], ['PROCDIR'])
  real = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-pseudo-home-')))
  mkdirSync(join(real, 'fd'))
  writeFileSync(join(real, 'environ'), '{"ordinary":true}\n')
  await observedWith('self', `HOME=/proc/self PROCDIR=/proc/${sidecarPid}`)
  // It holds the sidecar's own status file open (as any process of the user may).
  await observedWith('pid', `HOME=/proc/${sidecarPid} PROCDIR=/proc/self`, `3</proc/${sidecarPid}/status`)
  await observedWith('sys', 'HOME=/sys/kernel PROCDIR=/dev')
  await observedWith('ok', `HOME=${real} PROCDIR=${real}`)
}, 90_000)

afterAll(async () => {
  await o?.stop()
  rmSync(real, { recursive: true, force: true })
})

describe('observation roots on a pseudo filesystem', () => {
  it('resolve nothing beneath a HOME or a declared variable on procfs, sysfs or devtmpfs', async () => {
    for (const tid of ['self', 'pid', 'sys']) {
      const answers = [
        await files(tid, 'resolveHomeRelative', { relativePath: 'environ' }),
        await files(tid, 'resolveHomeRelative', { relativePath: 'uevent_seqnum' }),
        await files(tid, 'resolveHomeDirectory', { relativePath: 'fd' }),
        await files(tid, 'resolveRelativeToEnvironment', { relativePath: 'environ', environmentVariable: 'PROCDIR' }),
        await files(tid, 'resolveDirectoryRelativeToEnvironment', { relativePath: 'fd', environmentVariable: 'PROCDIR' }),
        await files(tid, 'resolveRelativeToEnvironment', { relativePath: 'null', environmentVariable: 'PROCDIR' }),
        await files(tid, 'resolvePathUnderHome', { providerPath: `/proc/${sidecarPid}/environ`, beneath: { homeRelative: '.' } }),
      ]
      for (const answer of answers)
        expect(answer, `${tid}: ${JSON.stringify(answer.body)}`).toEqual({ status: 200, body: { handle: null } })
    }
  })

  it('show no open file there either, and the same roots on ordinary directories still resolve', async () => {
    const { processes } = (await o.observe('pid', 'processes/descendants', observer, {})).body
    const open = await o.observe('pid', 'processes/openFiles', observer, {
      processes: processes.map((p: any) => p.handle),
      access: 'readable',
    })
    expect(open.status).toBe(200)
    expect(open.body.files).toEqual([])
    expect((await files('ok', 'resolveHomeRelative', { relativePath: 'environ' })).body.handle).not.toBeNull()
    expect((await files('ok', 'resolveHomeDirectory', { relativePath: 'fd' })).body.handle).not.toBeNull()
    const viaVariable = await files('ok', 'resolveRelativeToEnvironment', { relativePath: 'environ', environmentVariable: 'PROCDIR' })
    expect(viaVariable.body.handle).not.toBeNull()
  })
})

describe('workspace files on a pseudo filesystem', () => {
  it('a workspace registered at the sidecar’s /proc entry serves none of it (its environ holds the secret)', async () => {
    const made = await o.call('POST', '/v1/workspaces', { json: { path: `/proc/${sidecarPid}` } })
    expect(made.status, JSON.stringify(made.body)).toBeLessThan(300)
    const session = await o.call('POST', '/v1/sessions', { json: { id: 'on-proc', cwd: `/proc/${sidecarPid}` } })
    expect(session.status, JSON.stringify(session.body)).toBeLessThan(300)
    for (const [op, path] of [
      ['text', 'environ'],
      ['bytes', 'environ'],
      ['all', 'environ'],
      ['stat', 'environ'],
      ['text', 'cmdline'],
      ['list', ''],
      ['list', 'fd'],
    ]) {
      const answer = await o.call('GET', `/v1/sessions/on-proc/files/${op}?path=${encodeURIComponent(path)}`)
      expect([answer.status, answer.body.error?.code], `${op} ${path}`).toEqual([404, 'files/not-found'])
      expect(JSON.stringify(answer.body)).not.toContain(o.stack.sidecar.secret)
    }
  })
})
