import { describe, expect, it } from 'vitest'
import { checkRunLog, foldMembers, RunLogChecker, type LoggedEvent } from './workflow-log.ts'

const at = 1_700_000_000_000
const start = (): LoggedEvent['data'] => ({ run: { id: 'wf_1', sessionId: 's', concurrency: 2, profile: null }, at })
const agentStart = (seq: number) => ({ seq, label: `agent ${seq}`, profile: 'default', terminal: `wf_1-${seq}`, at })
const agentEnd = (seq: number, outcome = 'completed') => ({ seq, outcome, exitCode: outcome === 'completed' ? 0 : null, at })
const end = (stopReason = 'completed') => ({ result: { stopReason, value: null, agentsStarted: 2 }, at })

/** Numbers a list of [type, data] as the log would. */
function log(...events: [string, unknown][]): LoggedEvent[] {
  return events.map(([type, data], i) => ({ sequence: i + 1, type, data }))
}

const complete = log(
  ['workflow/start', start()],
  ['workflow/agent-start', agentStart(1)],
  ['workflow/log', { message: 'hi', at }],
  ['workflow/agent-start', agentStart(2)],
  ['workflow/agent-end', agentEnd(2, 'failed')],
  ['workflow/agent-end', agentEnd(1)],
  ['workflow/end', end()],
)

describe('checkRunLog', () => {
  it('accepts a complete log', () => {
    expect(checkRunLog(complete)).toEqual({ valid: true, ended: true, open: [] })
  })

  it('accepts a log whose tail lacks ends as interrupted evidence, naming the open members', () => {
    expect(checkRunLog(complete.slice(0, 4))).toEqual({ valid: true, ended: false, open: [1, 2] })
    expect(checkRunLog(complete.slice(0, 1))).toEqual({ valid: true, ended: false, open: [] })
  })

  const broken: [string, LoggedEvent[], RegExp][] = [
    ['an empty log', [], /empty/],
    ['a log that does not begin with start', log(['workflow/log', { message: 'x', at }]), /begin with workflow\/start/],
    ['two starts', log(['workflow/start', start()], ['workflow/start', start()]), /second workflow\/start/],
    ['a gap in the sequence', [complete[0], { ...complete[1], sequence: 3 }], /does not follow 1/],
    ['events out of order', [complete[1], complete[0]].map((e, i) => ({ ...e, sequence: i + 1 })), /begin with workflow\/start/],
    ['a member seq of 0', log(['workflow/start', start()], ['workflow/agent-start', agentStart(0)]), /not a positive integer/],
    ['a fractional member seq', log(['workflow/start', start()], ['workflow/agent-start', agentStart(1.5)]), /not a positive integer/],
    [
      'a member started twice',
      log(
        ['workflow/start', start()],
        ['workflow/agent-start', agentStart(1)],
        ['workflow/agent-end', agentEnd(1)],
        ['workflow/agent-start', agentStart(1)],
      ),
      /started twice/,
    ],
    ['an end without a start', log(['workflow/start', start()], ['workflow/agent-end', agentEnd(1)]), /without a start/],
    [
      'a member ended twice',
      log(
        ['workflow/start', start()],
        ['workflow/agent-start', agentStart(1)],
        ['workflow/agent-end', agentEnd(1)],
        ['workflow/agent-end', agentEnd(1)],
      ),
      /ended twice/,
    ],
    [
      'a run end while a member is open',
      log(['workflow/start', start()], ['workflow/agent-start', agentStart(1)], ['workflow/end', end()]),
      /members 1 were open/,
    ],
    [
      'an event after the run end',
      [...complete, { sequence: 8, type: 'workflow/log', data: { message: 'late', at } }],
      /nothing may follow/,
    ],
    ['a second run end', [...complete, { sequence: 8, type: 'workflow/end', data: end() }], /nothing may follow/],
    ['an unknown event type', log(['workflow/start', start()], ['workflow/phase', { title: 'x' }]), /unknown event type/],
    [
      'an outcome outside the vocabulary',
      log(['workflow/start', start()], ['workflow/agent-start', agentStart(1)], ['workflow/agent-end', agentEnd(1, 'exploded')]),
      /malformed/,
    ],
    ['a result without stopReason', log(['workflow/start', start()], ['workflow/end', { result: { agentsStarted: 0 }, at }]), /malformed/],
  ]

  it.each(broken)('rejects %s', (_name, events, problem) => {
    const check = checkRunLog(events)
    expect(check.valid).toBe(false)
    if (!check.valid) expect(check.problem).toMatch(problem)
  })

  it('refuses a bad event incrementally and keeps its state (the engine checks before it writes)', () => {
    const checker = new RunLogChecker()
    checker.accept(complete[0])
    checker.accept(complete[1])
    expect(() => checker.accept({ sequence: 3, type: 'workflow/end', data: end() })).toThrow(/were open/)
    checker.accept({ sequence: 3, type: 'workflow/agent-end', data: agentEnd(1, 'cancelled') })
    checker.accept({ sequence: 4, type: 'workflow/end', data: end('cancelled') })
    expect(checker.ended).toBe(true)
  })
})

describe('foldMembers', () => {
  it('folds starts and ends into members in seq order, open ones running or interrupted', () => {
    const partial = complete.slice(0, 5)
    expect(foldMembers(partial, false).map((m) => [m.seq, m.state, m.exitCode])).toEqual([
      [1, 'running', null],
      [2, 'failed', null],
    ])
    expect(foldMembers(partial, true).map((m) => m.state)).toEqual(['interrupted', 'failed'])
    expect(foldMembers(complete, false).map((m) => [m.seq, m.state, m.terminal])).toEqual([
      [1, 'completed', 'wf_1-1'],
      [2, 'failed', 'wf_1-2'],
    ])
  })
})
