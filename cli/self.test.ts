import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { commandFor, LAUNCHER, ROOT } from './self.ts'

describe('the command hints print', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'termkeep-self-'))
  const dir = (name: string) => join(scratch, name)
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))

  it('is the launcher by path when termkeep is not on PATH: ./termkeep in the clone, relative below, absolute elsewhere', () => {
    const env = { PATH: '/usr/bin:/bin' }
    expect(commandFor(env, ROOT)).toBe('./termkeep')
    expect(commandFor(env, dirname(ROOT))).toBe(`./${ROOT.split('/').at(-2)}/termkeep`)
    expect(commandFor(env, scratch)).toBe(LAUNCHER) // not tmpdir(): a clone may sit right under it
    expect(commandFor(env, join(ROOT, 'cli'))).toBe(LAUNCHER)
  })

  it('is plain termkeep when PATH leads to this installation (npm link makes such a symlink)', () => {
    const bin = dir('linked')
    mkdirSync(bin)
    symlinkSync(join(ROOT, 'cli', 'bin.js'), join(bin, 'termkeep'))
    expect(commandFor({ PATH: `/usr/bin:${bin}` }, tmpdir())).toBe('termkeep')
  })

  it('is the launcher when the termkeep on PATH is another program', () => {
    const bin = dir('other')
    mkdirSync(bin)
    writeFileSync(join(bin, 'termkeep'), '#!/bin/sh\n', { mode: 0o755 })
    expect(commandFor({ PATH: bin }, ROOT)).toBe('./termkeep')
  })
})
