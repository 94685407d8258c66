import { expect, test } from 'vitest'
import { integratedShell, withShellIntegration } from './integration.ts'

const env = { HOME: '/home/u', PATH: '/bin' }

test('bash, zsh and fish started interactively get their integration; nothing else does', () => {
  const bash = withShellIntegration({ file: '/usr/bin/bash', args: [], env }, '/d/nonce', '/s/')
  expect(bash).toEqual({
    spec: { file: '/usr/bin/bash', args: ['--init-file', '/s/termkeep.bash'], env: { ...env, TERMKEEP_SHELL_NONCE_FILE: '/d/nonce' } },
    commandMarks: 'injected',
  })
  const zsh = withShellIntegration({ file: '/bin/zsh', args: [], env: { ...env, ZDOTDIR: '/home/u/.config/zsh' } }, '/d/n', '/s/')
  expect(zsh.spec.env).toEqual({
    ...env,
    ZDOTDIR: '/s/zsh',
    TERMKEEP_USER_ZDOTDIR: '/home/u/.config/zsh',
    TERMKEEP_SHELL_NONCE_FILE: '/d/n',
  })
  expect(withShellIntegration({ file: '/bin/zsh', args: [], env }, '/d/n', '/s/').spec.env.TERMKEEP_USER_ZDOTDIR).toBeUndefined()
  const fish = withShellIntegration({ file: '/usr/bin/fish', args: [], env }, '/d/n', '/s/')
  expect(fish.spec.args[0]).toBe('--init-command')
  expect(fish.spec.env.TERMKEEP_SHELL_SCRIPT).toBe('/s/termkeep.fish')
  for (const spec of [
    { file: '/bin/sh', args: [], env },
    { file: '/bin/bash', args: ['-c', 'make'], env },
    { file: '/usr/bin/python3', args: [], env },
  ]) {
    expect(withShellIntegration(spec, '/d/n')).toEqual({ spec, commandMarks: 'none' })
  }
  expect(integratedShell({ file: '/opt/homebrew/bin/fish', args: [] })).toBe('fish')
})
