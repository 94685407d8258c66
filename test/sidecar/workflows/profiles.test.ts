import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../../schema/config.ts'
import { startSidecar } from '../../support/sidecar.ts'
import { loadProfiles } from '../../../sidecar/workflows/profiles.ts'

const echo = { command: ['echo', 'hi'], prompt: 'argument' }

describe('loadProfiles (TERMKEEP_AGENTS)', () => {
  it('reads inline JSON or a JSON file; unset means no profiles', () => {
    expect(loadProfiles(undefined).names).toEqual([])
    expect(loadProfiles('  ').names).toEqual([])
    const inline = loadProfiles(
      JSON.stringify({ default: echo, other: { command: ['x'], prompt: 'stdin', cwd: 'sub', env: { A_B: '1' } } }),
    )
    expect(inline.names).toEqual(['default', 'other'])
    expect(inline.get('other')).toEqual({ command: ['x'], prompt: 'stdin', cwd: 'sub', env: { A_B: '1' } })
    const dir = mkdtempSync(join(tmpdir(), 'termkeep-agents-'))
    writeFileSync(join(dir, 'agents.json'), JSON.stringify({ solo: echo }))
    expect(loadProfiles(join(dir, 'agents.json')).names).toEqual(['solo'])
    rmSync(dir, { recursive: true, force: true })
  })

  it('chooses the profile of an agent() call without one: the run\'s, "default", or the only one', () => {
    expect(loadProfiles(JSON.stringify({ default: echo, b: echo })).fallback(null)).toBe('default')
    expect(loadProfiles(JSON.stringify({ default: echo, b: echo })).fallback('b')).toBe('b')
    expect(loadProfiles(JSON.stringify({ only: echo })).fallback(null)).toBe('only')
    expect(loadProfiles(JSON.stringify({ a: echo, b: echo })).fallback(null)).toBeUndefined()
  })

  it.each([
    ['not JSON', '{"default":', /TERMKEEP_AGENTS.*not JSON/],
    ['a missing file', '/nonexistent/agents.json', /TERMKEEP_AGENTS.*readable JSON file/],
    ['an empty command', JSON.stringify({ a: { command: [], prompt: 'argument' } }), /a\.command: command is a non-empty argv array/],
    ['an empty program', JSON.stringify({ a: { command: [''], prompt: 'argument' } }), /argv\[0\]\) is empty/],
    ['an unknown prompt mode', JSON.stringify({ a: { command: ['x'], prompt: 'pipe' } }), /prompt is one of "argument", "stdin", "env"/],
    ['an unknown field', JSON.stringify({ a: { command: ['x'], prompt: 'env', shell: true } }), /shell/],
    ['a bad profile name', JSON.stringify({ 'a b': echo }), /profile names are/],
    ['a bad env name', JSON.stringify({ a: { ...echo, env: { '1X': 'y' } } }), /environment names/],
    ['an array', '[1]', /TERMKEEP_AGENTS/],
  ])('refuses %s with one line naming the variable', (_name, raw, message) => {
    let error: unknown
    try {
      loadProfiles(raw)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toMatch(/^termkeep: invalid TERMKEEP_AGENTS=/)
    expect((error as Error).message).toMatch(message)
    expect((error as Error).message).not.toContain('\n')
  })

  it('stops the sidecar at start with that line', async () => {
    const failed = await startSidecar({ env: { TERMKEEP_AGENTS: '{"default": {"command": []}}' } }).then(
      () => 'started',
      (error: Error) => error.message,
    )
    expect(failed).toMatch(/exited with 1 during start/)
    expect(failed).toMatch(/termkeep sidecar: termkeep: invalid TERMKEEP_AGENTS=.*command/)
  })
})
