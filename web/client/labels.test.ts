/** The page's pure pieces: what sessions and terminals are called, addresses, and scaled font sizes. */
import { describe, expect, it } from 'vitest'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { endedText, endedWord, programsOf, sessionLabel, sessionMarker, terminalName } from './labels.ts'
import { parseRoute, routeHash } from '../page/route.ts'
import { fittingFontSize } from '../page/sizing.ts'

const terminal = (patch: Partial<TerminalInfo>): TerminalInfo => ({
  sessionId: 's',
  id: 't',
  title: 'bash',
  shell: { path: '/bin/bash', args: [], name: 'bash' },
  cwd: '/home/me/app',
  cols: 80,
  rows: 24,
  state: 'running',
  exitCode: null,
  exitSignal: null,
  error: null,
  hostGeneration: 1,
  controllerId: null,
  createdAt: 0,
  updatedAt: 0,
  closedAt: null,
  foregroundCommand: 'bash',
  name: null,
  commandMarks: 'none',
  ...patch,
})

describe('labels', () => {
  it('names a terminal after its foreground program unless a person named it', () => {
    expect(terminalName(terminal({ foregroundCommand: 'vim' }))).toBe('vim')
    expect(terminalName(terminal({ foregroundCommand: 'vim', title: 'editor' }))).toBe('editor')
    expect(terminalName(terminal({ state: 'exited', foregroundCommand: null }))).toBe('bash')
  })

  it('marks a session live, ended, retired or empty', () => {
    expect(sessionMarker([])).toBe('empty')
    expect(sessionMarker([terminal({ state: 'exited' }), terminal({ state: 'running' })])).toBe('live')
    expect(sessionMarker([terminal({ state: 'exited' }), terminal({ state: 'retired' })])).toBe('ended')
    expect(sessionMarker([terminal({ state: 'retired' }), terminal({ state: 'retired' })])).toBe('retired')
  })

  it('marks a session whose host is down unreachable while something ran in it, never retired', () => {
    expect(sessionMarker([terminal({ state: 'running', unreachable: true }), terminal({ state: 'retired' })])).toBe('unreachable')
    expect(sessionMarker([terminal({ state: 'running' })], true)).toBe('unreachable')
    expect(sessionMarker([terminal({ state: 'retired' })], true)).toBe('retired')
    expect(sessionMarker([], true)).toBe('empty')
  })

  it("labels a session by its name, else its directory, with its live terminals' programs once each", () => {
    const session = {
      id: 'ses_1',
      cwd: '/home/me/app',
      title: null,
      name: null,
      workspaceId: null,
      archived: false,
      createdAt: 0,
      host: null,
    }
    const running = [terminal({ foregroundCommand: 'vim' }), terminal({}), terminal({}), terminal({ state: 'exited', title: 'old' })]
    expect(sessionLabel(session, running)).toMatchObject({ name: 'app', running: 'vim, bash', marker: 'live' })
    expect(sessionLabel({ ...session, title: 'deploy' }, []).name).toBe('deploy')
    expect(sessionLabel({ ...session, title: 'deploy', name: 'release' }, undefined)).toMatchObject({ name: 'release', marker: 'empty' })
    expect(programsOf(['a', 'b', 'c', 'd'].map((p) => terminal({ foregroundCommand: p })))).toBe('a, b, c +1')
  })

  it('says how a terminal ended in words, "closed" for a close, never a bare signal number', () => {
    const closed = terminal({ state: 'retired', exitSignal: 1, closedAt: 5 })
    expect(endedText(closed)).toBe('was closed')
    expect(endedText(closed, true)).toBe('was closed from this window')
    expect(endedWord(closed)).toBe('closed')
    expect(endedText(terminal({ state: 'exited', exitCode: 2 }))).toBe('exited with code 2')
    expect(endedText(terminal({ state: 'exited', exitSignal: 9 }))).toBe('was ended by SIGKILL')
    expect(endedWord(terminal({ state: 'exited', exitSignal: 9 }))).toBe('SIGKILL')
    expect(endedText(terminal({ state: 'retired' }))).toBe('ended when its terminal host stopped or restarted')
    expect(endedText(terminal({ state: 'closed', exitCode: 0, closedAt: 5 }))).toBe('was closed (its shell had exited with code 0)')
  })
})

describe('page addresses', () => {
  it('round-trips sessions and terminals, and reads nothing else as one', () => {
    for (const route of [{ sessionId: 'ses_a-1' }, { sessionId: 'ses_a', terminalId: 't-x_2' }]) {
      expect(parseRoute(routeHash(route))).toEqual({ terminalId: undefined, ...route })
    }
    expect(parseRoute('#content')).toEqual({})
    expect(parseRoute('#/s/a b')).toEqual({})
    expect(routeHash({})).toBe('')
  })
})

describe('scaled font sizes', () => {
  it('shrinks to fit in half-pixel steps, never above the base size or below the smallest', () => {
    expect(fittingFontSize({ width: 800, height: 400 }, { width: 400, height: 400 }, 14)).toBe(7)
    expect(fittingFontSize({ width: 400, height: 200 }, { width: 800, height: 800 }, 14)).toBe(14)
    expect(fittingFontSize({ width: 1000, height: 100 }, { width: 100, height: 100 }, 14)).toBe(6)
    expect(fittingFontSize({ width: 840, height: 100 }, { width: 800, height: 100 }, 14)).toBe(13)
  })
})
