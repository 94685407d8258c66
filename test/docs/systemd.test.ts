/**
 * The systemd user unit the operations guide gives (docs/termkeep.service) is one systemd accepts
 * as written (`systemd-analyze verify --user`: it also warns about settings it ignores), and it
 * keeps the two settings the keeper depends on: only serve is signalled at a stop, and a failed
 * serve is started again.
 */
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const UNIT = new URL('../../docs/termkeep.service', import.meta.url).pathname
const analyze = spawnSync('systemd-analyze', ['--version'])
const available = analyze.status === 0

describe('docs/termkeep.service', () => {
  it('keeps the keeper out of a stop, and restarts serve on failure', () => {
    const unit = readFileSync(UNIT, 'utf8')
    expect(unit).toMatch(/^KillMode=process$/m)
    expect(unit).toMatch(/^Restart=on-failure$/m)
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/env npm start$/m)
  })

  it.skipIf(!available)('is accepted by systemd-analyze verify --user without a warning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'termkeep-unit-'))
    try {
      copyFileSync(UNIT, join(dir, 'termkeep.service'))
      // --user needs a runtime directory (a login session has one; a test, its own).
      const verified = spawnSync('systemd-analyze', ['verify', '--user', join(dir, 'termkeep.service')], {
        encoding: 'utf8',
        env: { ...process.env, XDG_RUNTIME_DIR: dir },
      })
      expect([verified.status, verified.stderr.trim(), verified.stdout.trim()]).toEqual([0, '', ''])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

if (!available) console.warn('systemd.test.ts: systemd-analyze is not installed here; the unit was not verified')
