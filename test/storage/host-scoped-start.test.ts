/**
 * What a starting sidecar judges is its own host's: the terminals it adopts from its keeper or
 * retires (storage/terminals.ts `unretired`) and the command records its earlier generations left
 * running (storage/commands.ts `endAbandoned`), never another host's: on a shared database that
 * host's terminals and commands are still running, in its own keeper on its own machine.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openStorage } from '../../storage/client.ts'
import { CommandStore } from '../../storage/commands.ts'
import { insertGeneration } from '../../storage/generations.ts'
import { migrate } from '../../storage/migrate.ts'
import { TerminalStore } from '../../storage/terminals.ts'
import { terminalCommands, terminals } from '../../storage/tables.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-abandoned-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const runner = (hostId: string) => ({ hostId, pid: 1, startTicks: 1, bootId: 'boot', hostname: hostId, pidNamespace: 'pid:[1]' })

describe('a start on a database shared by hosts', () => {
  it("takes this host's earlier terminals and command records, and leaves another host's running", async () => {
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
      const unretired = await new TerminalStore(storage.db).unretired(mineNow)
      expect(unretired.map((row) => row.id)).toEqual(['mine'])
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
