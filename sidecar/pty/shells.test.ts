import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { listShells, preferredShell } from './shells.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-shells-'))
const shellsFile = join(dir, 'shells')
writeFileSync(shellsFile, '# comment\n/bin/sh\n/no/such/shell\n/bin/bash\n/bin/sh\n/bin/dash\n')
const savedShell = process.env.SHELL

afterEach(() => {
  if (savedShell === undefined) delete process.env.SHELL
  else process.env.SHELL = savedShell
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('listShells', () => {
  it('lists existing executables in file order without duplicates', () => {
    expect(listShells(shellsFile, '').map((s) => s.path)).toEqual(['/bin/sh', '/bin/bash', '/bin/dash'])
  })

  it('puts the preferred shell first when it is listed, and ignores it when it is not', () => {
    expect(listShells(shellsFile, '/bin/bash').map((s) => s.path)).toEqual(['/bin/bash', '/bin/sh', '/bin/dash'])
    expect(listShells(shellsFile, '/usr/bin/fish').map((s) => s.path)).toEqual(['/bin/sh', '/bin/bash', '/bin/dash'])
  })

  it('prefers $SHELL, else the login shell of the account (as tmux does when $SHELL is unset)', () => {
    process.env.SHELL = '/bin/dash'
    expect(preferredShell()).toBe('/bin/dash')
    expect(listShells(shellsFile)[0].path).toBe('/bin/dash')
    delete process.env.SHELL
    let login: string | undefined
    try {
      login = userInfo().shell ?? undefined
    } catch {
      // a uid without a passwd entry (some containers): no login shell to prefer
    }
    expect(preferredShell()).toBe(login)
    if (login === '/bin/bash') expect(listShells(shellsFile)[0].path).toBe('/bin/bash')
  })

  it('falls back to /bin/sh when the shells file is missing', () => {
    expect(listShells(join(dir, 'missing'), '')).toEqual([{ path: '/bin/sh', args: [], name: 'sh' }])
  })
})
