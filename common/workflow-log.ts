/**
 * A workflow run's event log, pure: the invariant every log keeps (checked by the engine before
 * each event is written, and by the API when it loads a run) and the fold of its member events.
 *
 * The invariant (seed 003): sequences are 1, 2, 3… in order; exactly one `workflow/start`, first;
 * member seqs are positive integers, each started once; every `agent-end` pairs an open
 * `agent-start`; no `workflow/end` while a member is open; nothing after `workflow/end`. A log
 * whose tail lacks ends (its sidecar died) is valid evidence of an interrupted run, not corruption:
 * it checks as valid with `ended: false`.
 */
import * as v from 'valibot'
import {
  AgentEndData,
  AgentStartData,
  LogData,
  RunEndData,
  RunStartData,
  type RunMember,
  type WorkflowEventType,
} from '../schema/wire/workflows.ts'

export interface LoggedEvent {
  sequence: number
  type: WorkflowEventType | string
  data: unknown
}

export type LogCheck = { valid: true; ended: boolean; open: number[] } | { valid: false; problem: string; sequence: number }

const DATA: Record<WorkflowEventType, v.GenericSchema> = {
  'workflow/start': RunStartData,
  'workflow/agent-start': AgentStartData,
  'workflow/agent-end': AgentEndData,
  'workflow/log': LogData,
  'workflow/end': RunEndData,
}

export class LogViolation extends Error {
  constructor(
    readonly sequence: number,
    message: string,
  ) {
    super(message)
    this.name = 'LogViolation'
  }
}

/** The invariant, one event at a time: `accept` throws a LogViolation for an event that breaks it. */
export class RunLogChecker {
  #last = 0
  #started = false
  #ended = false
  readonly #seen = new Set<number>()
  readonly #open = new Set<number>()

  get ended(): boolean {
    return this.#ended
  }

  /** Members started and not ended, in seq order. */
  get open(): number[] {
    return [...this.#open].sort((a, b) => a - b)
  }

  accept(event: LoggedEvent): void {
    const at = event.sequence
    const fail = (message: string): never => {
      throw new LogViolation(at, `event ${at} (${event.type}): ${message}`)
    }
    if (at !== this.#last + 1) fail(`sequence ${at} does not follow ${this.#last}`)
    const schema = DATA[event.type as WorkflowEventType]
    if (!schema) fail('unknown event type')
    if (!v.is(schema, event.data)) fail('malformed data')
    if (this.#ended) fail('nothing may follow workflow/end')
    if (event.type === 'workflow/start') {
      if (this.#started) fail('a second workflow/start')
    } else if (!this.#started) {
      fail('the log must begin with workflow/start')
    }
    const seq = (event.data as { seq?: number }).seq
    switch (event.type) {
      case 'workflow/start':
        this.#started = true
        break
      case 'workflow/agent-start':
        if (!Number.isSafeInteger(seq) || seq! < 1) fail(`member seq ${seq} is not a positive integer`)
        if (this.#seen.has(seq!)) fail(`member ${seq} started twice`)
        this.#seen.add(seq!)
        this.#open.add(seq!)
        break
      case 'workflow/agent-end':
        if (!this.#open.has(seq!)) fail(this.#seen.has(seq!) ? `member ${seq} ended twice` : `member ${seq} ended without a start`)
        this.#open.delete(seq!)
        break
      case 'workflow/end':
        if (this.#open.size > 0) fail(`the run ended while members ${this.open.join(', ')} were open`)
        this.#ended = true
        break
    }
    this.#last = at
  }
}

/** Checks a whole log (in the order given). */
export function checkRunLog(events: readonly LoggedEvent[]): LogCheck {
  const checker = new RunLogChecker()
  try {
    for (const event of events) checker.accept(event)
  } catch (error) {
    if (error instanceof LogViolation) return { valid: false, problem: error.message, sequence: error.sequence }
    throw error
  }
  if (events.length === 0) return { valid: false, problem: 'the log is empty (no workflow/start)', sequence: 0 }
  return { valid: true, ended: checker.ended, open: checker.open }
}

/**
 * The members of a run from its agent-start / agent-end events, in seq order. A member without an
 * end is `running`, or `interrupted` when the run was (its sidecar died).
 */
export function foldMembers(events: readonly LoggedEvent[], interrupted: boolean): RunMember[] {
  const members = new Map<number, RunMember>()
  for (const event of events) {
    if (event.type === 'workflow/agent-start') {
      const d = event.data as AgentStartData
      members.set(d.seq, {
        seq: d.seq,
        label: d.label,
        profile: d.profile,
        terminal: d.terminal,
        state: 'running',
        exitCode: null,
        startedAt: d.at,
        endedAt: null,
      })
    } else if (event.type === 'workflow/agent-end') {
      const d = event.data as AgentEndData
      const member = members.get(d.seq)
      if (member) Object.assign(member, { state: d.outcome, exitCode: d.exitCode, endedAt: d.at })
    }
  }
  const list = [...members.values()].sort((a, b) => a.seq - b.seq)
  if (interrupted) for (const member of list) if (member.state === 'running') member.state = 'interrupted'
  return list
}
