/**
 * Migration 0012 (workspaces on a host) on a database written before it: its workspaces keep
 * working and belong to the host they were made on. With one host (a single machine upgrading)
 * that host's first start takes every workspace and session without a host; with several, each
 * host takes the workspaces that list one of its sessions, and no other.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { migrations as bundled } from '../../migrations/bundled.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { adoptUnhosted } from '../../storage/hosts.ts'
import { migrate } from '../../storage/migrate.ts'
import { listWorkspaces, sessionById } from '../../storage/registry/workspaces.ts'

/** The migrations before workspaces had hosts (the one that adds `workspaces_host_path`). */
const BEFORE = bundled.slice(
  0,
  bundled.findIndex((m) => JSON.stringify(m.sql).includes('workspaces_host_path')),
)
let storage: Storage | undefined

afterEach(() => storage?.close())

async function oldDatabase(hosts: string[], rows: string[]): Promise<Storage> {
  storage = await openStorage({ url: `file:${join(mkdtempSync(join(tmpdir(), 'termkeep-ws-hosts-')), 'db.sqlite')}` })
  await migrate(storage.client, BEFORE)
  for (const id of hosts) {
    await storage.client.execute({
      sql: "INSERT INTO hosts (id, name, url, version, cpus, memory_bytes) VALUES (?, ?, 'http://127.0.0.1:1', '0.1.0', 2, 1024)",
      args: [id, id],
    })
  }
  for (const sql of rows) await storage.client.execute(sql)
  expect(await migrate(storage.client)).toEqual({ applied: bundled.length - BEFORE.length, total: bundled.length })
  return storage
}

const workspace = (id: string, path: string) => `INSERT INTO workspaces (id, path, title, position) VALUES ('${id}', '${path}', '${id}', 0)`
const session = (id: string, cwd: string, host: string | null, listedIn?: string) => [
  `INSERT INTO sessions (id, cwd, host_id) VALUES ('${id}', '${cwd}', ${host === null ? 'NULL' : `'${host}'`})`,
  ...(listedIn ? [`INSERT INTO workspace_sessions (workspace_id, session_id, position) VALUES ('${listedIn}', '${id}', 0)`] : []),
]

describe('migration 0012 on a database written before workspaces had hosts', () => {
  it('one host: its first start takes every workspace and session; the rows stay as they were', async () => {
    const db = (await oldDatabase(['host_a'], [workspace('ws_1', '/p'), workspace('ws_2', '/q'), ...session('s1', '/p', null, 'ws_1')])).db
    expect((await listWorkspaces(db)).workspaces.map((w) => [w.id, w.host, w.sessionIds])).toEqual([
      ['ws_1', null, ['s1']],
      ['ws_2', null, []],
    ])
    expect(await adoptUnhosted(db, 'host_a')).toEqual({ sessions: 1, workspaces: 2 })
    expect((await listWorkspaces(db)).workspaces.map((w) => [w.id, w.path, w.host, w.sessionIds])).toEqual([
      ['ws_1', '/p', 'host_a', ['s1']],
      ['ws_2', '/q', 'host_a', []],
    ])
    expect((await sessionById(db, 's1'))?.workspaceId).toBe('ws_1')
    expect(await adoptUnhosted(db, 'host_a')).toEqual({ sessions: 0, workspaces: 0 })
  })

  it('several hosts: each takes the workspaces listing its sessions; one listing none waits for a request to name its host', async () => {
    const rows = [workspace('ws_a', '/p'), workspace('ws_b', '/r'), workspace('ws_none', '/s')]
    const db = (
      await oldDatabase(['host_a', 'host_b'], [...rows, ...session('sa', '/p', 'host_a', 'ws_a'), ...session('sb', '/r', 'host_b', 'ws_b')])
    ).db
    expect(await adoptUnhosted(db, 'host_a')).toEqual({ sessions: 0, workspaces: 1 })
    expect(await adoptUnhosted(db, 'host_b')).toEqual({ sessions: 0, workspaces: 1 })
    expect((await listWorkspaces(db)).workspaces.map((w) => [w.id, w.host])).toEqual([
      ['ws_a', 'host_a'],
      ['ws_b', 'host_b'],
      ['ws_none', null],
    ])
  })
})
