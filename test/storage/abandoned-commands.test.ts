/**
 * A starting sidecar ends the command records its own host's earlier generations left running
 * (storage/commands.ts `endAbandoned`), never another host's: on a shared database that host's
 * commands are still running.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openStorage } from '../../storage/client.ts'
import { CommandStore } from '../../storage/commands.ts'
import { insertGeneration } from '../../storage/generations.ts'
import { migrate } from '../../storage/migrate.ts'
import { terminalCommands, terminals } from '../../storage/tables.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-abandoned-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const runner = (hostId: string) => ({ hostId, pid: 1, startTicks: 1, bootId: 'boot', hostname: hostId, pidNamespace: 'pid:[1]' })

describe('endAbandoned on a database shared by hosts', () => {
  it("ends this host's earlier records and leaves another host's running", async () => {
    const storage = await openStorage({ url: `file:${join(dir, 'commands.db')}` })
    try {
      await migrate(storage.client)
      const [mineBefore, theirs, mineNow] = [
        await insertGeneration(storage.db, runner('host_a')),
        await insertGeneration(storage.db, runner('host_b')),
        await insertGeneration(storage.db, runner('host_a')),
      ]
      for (const [id, generation] of [
        ['mine', mineBefore],
        ['theirs', theirs],
      ] as const) {
        await storage.db.insert(terminals).values({
          sessionId: 's',
          id,
          title: id,
          shellPath: '/bin/sh',
          shellArgs: [],
          cwd: '/',
          cols: 80,
          rows: 24,
          state: 'running',
          hostGeneration: generation,
        })
        await storage.db.insert(terminalCommands).values({
          sessionId: 's',
          terminalId: id,
          n: 1,
          command: 'sleep 60',
          startSequence: 1,
          startSkip: 0,
          startedAt: 1,
          marks: 'injected',
        })
      }
      await new CommandStore(storage.db).endAbandoned(mineNow, 42)
      const ended = await storage.db
        .select({ terminalId: terminalCommands.terminalId, endedAt: terminalCommands.endedAt })
        .from(terminalCommands)
      expect(Object.fromEntries(ended.map((r) => [r.terminalId, r.endedAt]))).toEqual({ mine: 42, theirs: null })
    } finally {
      storage.close()
    }
  })
})
