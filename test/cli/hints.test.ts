/**
 * Every command a CLI message tells a person to run works where it was printed: in the clone
 * (`./termkeep`, not on PATH), from another directory (the launcher's absolute path), and once
 * `npm link` put `termkeep` on PATH (plain `termkeep`). Each hint is taken from the message and run
 * by a shell in the same directory with the same PATH.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { LAUNCHER, ROOT } from '../../cli/self.ts'
import { runCli } from './run.ts'

/** The first `command` quoted in backticks in a message. */
const hintIn = (message: string) => /`([^`]+)`/.exec(message)?.[1]

function shell(command: string, cwd: string, env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', command], { cwd, env: { ...process.env, ...env } }, (error, stdout) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout }),
    )
  })
}

describe('the commands CLI messages print', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'termkeep-hints-'))
  const linked = join(scratch, 'bin')
  mkdirSync(linked)
  // What `npm link` makes: a `termkeep` on PATH that leads to cli/bin.js of this installation.
  symlinkSync(join(ROOT, 'cli', 'bin.js'), join(linked, 'termkeep'))
  const plainPath = process.env
    .PATH!.split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':')
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))

  const places = [
    { name: 'in the clone', cwd: ROOT, PATH: plainPath, expected: './termkeep' },
    { name: 'elsewhere', cwd: scratch, PATH: plainPath, expected: LAUNCHER },
    { name: 'after npm link', cwd: scratch, PATH: `${linked}:${plainPath}`, expected: 'termkeep' },
  ]

  for (const { name, cwd, PATH, expected } of places) {
    it(`${name}: the no-token and usage hints name ${expected}, and run there`, async () => {
      const env = { PATH, INIT_CWD: '' }
      const noToken = await runCli(['ls'], env, cwd)
      expect(noToken.code).toBe(1)
      const mint = hintIn(noToken.stderr)!
      expect(mint).toBe(`${expected} token create`)
      const usage = await runCli(['close', 'only-one'], env, cwd)
      expect(usage.code).toBe(2)
      const help = hintIn(usage.stderr)!
      expect(help).toBe(`${expected} close --help`)
      for (const command of [`${mint} --help`, help]) {
        const result = await shell(command, cwd, env)
        expect(result.code, command).toBe(0)
        expect(result.stdout, command).toMatch(/^usage: termkeep /)
      }
    })
  }
})
