/** The pure cores of observation: /proc parsing, the tree, names, tty numbers, paths, listing
 * selection, JSON Lines records, `ps` lines, capabilities. */
import { describe, expect, it } from 'vitest'
import { psLines } from '../../cli/ps.ts'
import { capabilitiesOf, undeclaredNames } from '../../schema/wire/observation.ts'
import { selectNewest } from './listing.ts'
import { deviceIdOf, environFrom, executableNameOf, parseStat, ptsDeviceNumber, terminalTree, type ProcStat } from './proc.ts'
import { jsonLineOf } from './reading.ts'
import { relativeBeneath, shownPath } from './roots.ts'

const stat = (pid: number, ppid: number, session: number, pgrp = pid): ProcStat => ({
  pid,
  comm: `p${pid}`,
  state: 'S',
  ppid,
  pgrp,
  session,
  ttyNr: 34816,
  tpgid: pgrp,
  startTicks: pid * 10,
})

describe('/proc', () => {
  it('reads environ entries, and drops the partial last one when the read hit its bound', () => {
    const raw = Buffer.from('A=1\0HOME=/home/alice\0A=2\0EMPTY=\0')
    expect(environFrom(raw, false)).toEqual({ A: '1', HOME: '/home/alice', EMPTY: '' })
    // Cut in the middle of HOME's value: "/home/al" could name another existing directory.
    const cut = Buffer.from('A=1\0HOME=/home/al')
    expect(environFrom(cut, true)).toEqual({ A: '1' })
    expect(environFrom(cut, false)).toEqual({ A: '1', HOME: '/home/al' })
    // Cut right after a separator: every entry before it is whole, nothing is partial.
    expect(environFrom(Buffer.from('A=1\0B=2\0'), true)).toEqual({ A: '1', B: '2' })
    expect(environFrom(Buffer.from('HOME=/ho'), true)).toEqual({})
  })

  it('parses a stat line whose command name has spaces and parentheses', () => {
    const line = '4321 (my (odd) name) S 100 4321 100 34817 4400 4194304 1 2 3 4 5 6 7 8 20 0 1 0 55555 100 200'
    expect(parseStat(4321, line)).toEqual({
      pid: 4321,
      comm: 'my (odd) name',
      state: 'S',
      ppid: 100,
      pgrp: 4321,
      session: 100,
      ttyNr: 34817,
      tpgid: 4400,
      startTicks: 55555,
    })
    expect(parseStat(1, 'garbage')).toBeUndefined()
    expect(parseStat(1, '1 (x) S 0 1')).toBeUndefined()
  })

  it("walks the tree from the shell (children in pid order), then its session's strays", () => {
    const table = new Map([
      [10, stat(10, 1, 10)],
      [30, stat(30, 10, 10)],
      [20, stat(20, 10, 10)],
      [25, stat(25, 20, 25)], // left the session (setsid) but is still a descendant
      [40, stat(40, 1, 10)], // an orphan of the session, reparented to init
      [50, stat(50, 1, 50)], // someone else's
      [60, stat(60, 50, 50)],
    ])
    expect(terminalTree(table, 10).map((p) => p.pid)).toEqual([10, 20, 25, 30, 40])
    expect(terminalTree(table, 99)).toEqual([])
  })

  it('names a program like tmux does', () => {
    expect(executableNameOf(['/usr/bin/vim', 'x'], 'vim')).toBe('vim')
    expect(executableNameOf(['-bash'], 'bash')).toBe('bash')
    expect(executableNameOf(['sshd: alice@pts/0'], 'sshd')).toBe('sshd:')
    expect(executableNameOf(['/opt/My Apps/tool', '--x'], 'tool')).toBe('tool')
    expect(executableNameOf(undefined, 'kworker')).toBe('kworker')
    expect(executableNameOf([''], 'zombie')).toBe('zombie')
  })

  it('knows the device numbers of /dev/pts', () => {
    expect(ptsDeviceNumber(0)).toBe(34816) // 136:0, as /proc/<pid>/stat shows it
    expect(deviceIdOf(ptsDeviceNumber(3))).toBe('136:3')
    expect(deviceIdOf(ptsDeviceNumber(300))).toBe('137:44')
  })
})

describe('paths', () => {
  const roots = [
    { path: '/home/alice', base: 'home' as const },
    { path: '/data/codex', base: 'env:CODEX_HOME' as const },
  ]
  it('are shown beneath the home or a declared variable, never raw', () => {
    expect(shownPath(roots, '/home/alice')).toBe('~')
    expect(shownPath(roots, '/home/alice/.codex/a.jsonl')).toBe('~/.codex/a.jsonl')
    expect(shownPath(roots, '/data/codex/s/b.jsonl')).toBe('$CODEX_HOME/s/b.jsonl')
    expect(shownPath(roots, '/home/alicex/a')).toBeUndefined()
    expect(shownPath(roots, '/etc/passwd')).toBeUndefined()
  })

  it('are facts relative to a root only when strictly beneath it', () => {
    expect(relativeBeneath('/home/alice/.codex', '/home/alice/.codex/s/a.jsonl')).toBe('s/a.jsonl')
    expect(relativeBeneath('/home/alice/.codex', '/home/alice/.codex')).toBeUndefined()
    expect(relativeBeneath('/home/alice/.codex', '/home/alice/.codexx/a')).toBeUndefined()
  })
})

describe('listing selection', () => {
  const f = (relativePath: string, mtimeMs: number, size = 10) => ({ relativePath, mtimeMs, size })
  it('orders oldest first (ties by path) and keeps the newest that fit', () => {
    const found = [f('b', 2), f('a', 2), f('c', 1), f('d', 3)]
    expect(selectNewest(found, 10, 1000)).toEqual({ kept: [f('c', 1), f('a', 2), f('b', 2), f('d', 3)], dropped: false })
    expect(selectNewest(found, 2, 1000)).toEqual({ kept: [f('b', 2), f('d', 3)], dropped: true })
    expect(selectNewest(found, 10, 25)).toEqual({ kept: [f('b', 2), f('d', 3)], dropped: true })
    // The newest alone is too large: nothing older is listed in its place.
    expect(selectNewest([f('old', 1, 1), f('new', 2, 100)], 10, 50)).toEqual({ kept: [], dropped: true })
  })
})

describe('JSON Lines records', () => {
  const window = (text: string) => Buffer.from(text)
  it('takes the first and the last complete record', () => {
    expect(jsonLineOf(window('{"a":1}\n{"a":2}\n'), 'first', true, true)).toEqual({ a: 1 })
    expect(jsonLineOf(window('{"a":1}\n{"a":2}\n'), 'last', true, true)).toEqual({ a: 2 })
    expect(jsonLineOf(window('\n\n{"a":1}\n\n'), 'last', true, true)).toEqual({ a: 1 })
  })
  it('skips a fragment at the window start, and a final line still being written', () => {
    expect(jsonLineOf(window('":0}\n{"a":1}\n{"a":2'), 'last', false, true)).toEqual({ a: 1 })
    expect(jsonLineOf(window('":0}\n{"a":1}\n{"a":2}'), 'last', false, true)).toEqual({ a: 2 }) // complete, unterminated
    expect(jsonLineOf(window('{"a":1}'), 'first', true, true)).toEqual({ a: 1 })
    expect(jsonLineOf(window('{"a":1'), 'first', true, false)).toBeNull()
  })
  it('is null for a line that is not JSON', () => {
    expect(jsonLineOf(window('not json\n'), 'first', true, true)).toBeNull()
    expect(jsonLineOf(window(''), 'last', true, true)).toBeNull()
  })
})

describe('termkeep ps lines', () => {
  it('indent children under their parents and mark the foreground group', () => {
    const p = (pid: number, parentPid: number, name: string, foreground = false, args?: string[]) => ({
      handle: { id: `h${pid}` },
      executableName: name,
      pid,
      parentPid,
      state: 'S',
      foreground,
      ...(args ? { arguments: args } : {}),
    })
    const lines = psLines([
      p(10, 1, 'bash'),
      p(20, 10, 'make', true, ['all']),
      p(30, 20, 'cc', true, ['-c', 'x.c']),
      p(40, 10, 'sleep', false, ['9']),
    ])
    expect(lines).toEqual([
      '    PID STAT START    COMMAND',
      '     10 S    -        bash',
      '     20 S+   -         \\_ make all',
      '     30 S+   -             \\_ cc -c x.c',
      '     40 S    -         \\_ sleep 9',
    ])
  })
})

describe('grants and names', () => {
  it('give the capabilities of the observe grants only', () => {
    expect(capabilitiesOf(new Set(['observe:files', 'terminals:control']))).toEqual(['filesystem-observation'])
    expect(capabilitiesOf(new Set(['observe:process', 'observe:files', 'observe:journal']))).toEqual([
      'process-observation',
      'filesystem-observation',
      'agent-journal',
    ])
  })
  it('tell the undeclared names', () => {
    expect(undeclaredNames(['A', 'B', 'C'], new Set(['B']))).toEqual(['A', 'C'])
  })
})
