/** The /proc thread on real processes: a tree with its foreground leader, argv and cwd, the
 * environment a process started with, and the regular files it holds open. */
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../support/ports.ts'
import { procReader } from '../../../sidecar/observation/proc-reader.ts'

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-proc-')))
// A shell with two children, in a session of its own (as a terminal's shell is).
const shell = spawn('/bin/sh', ['-c', 'sleep 300 & sleep 301 & wait'], {
  cwd: dir,
  detached: true,
  stdio: 'ignore',
  env: { PATH: process.env.PATH, OBSERVED: 'yes' },
})
afterAll(() => {
  process.kill(-shell.pid!, 'SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

describe('procReader', () => {
  it("reads a session's tree, argv, cwd and environment", async () => {
    const { tree, foreground } = await waitFor(
      async () => {
        const answer = await procReader.tree(shell.pid!)
        return answer.tree.length === 3 && answer
      },
      10_000,
      'the shell and its two sleeps',
    )
    expect(tree[0].pid).toBe(shell.pid)
    expect(tree.slice(1).map((p) => p.ppid)).toEqual([shell.pid, shell.pid])
    // No controlling terminal: the shell stands for the foreground.
    expect(foreground?.pid).toBe(shell.pid)
    const details = await procReader.details(tree.map((p) => p.pid))
    expect(details.map((d) => d.argv)).toEqual([
      ['/bin/sh', '-c', 'sleep 300 & sleep 301 & wait'],
      ['sleep', '300'],
      ['sleep', '301'],
    ])
    expect(details.every((d) => d.cwd === dir)).toBe(true)
    expect(await procReader.environ(shell.pid!)).toEqual({ PATH: process.env.PATH, OBSERVED: 'yes' })
    expect(await procReader.tree(2 ** 22 + 1)).toEqual({ tree: [], foreground: undefined })
  })

  it('lists the regular files a process holds open, with their access', async () => {
    const path = join(dir, 'held.log')
    const fd = openSync(path, 'a')
    try {
      const [mine] = await procReader.descriptors([process.pid])
      expect(mine.filter((d) => d.path === path)).toEqual([
        { path, access: 'writable', identity: expect.objectContaining({ ino: expect.any(String) }) },
      ])
      expect(mine.some((d) => d.path.startsWith('socket:') || d.path.startsWith('pipe:'))).toBe(false)
    } finally {
      closeSync(fd)
    }
  })
})
