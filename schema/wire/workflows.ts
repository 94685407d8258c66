/**
 * The workflow contract (seed 003, DESIGN.md "Workflows"). The API serves these routes; starting
 * and cancelling are delegated to the sidecar (same paths), everything else is read from libSQL:
 *
 *   POST /v1/sessions/:sid/workflows               StartWorkflow → 201 {run: RunSummary}; with an
 *        Idempotency-Key (optional) a repeat of the same request answers the same run, 200
 *   GET  /v1/sessions/:sid/workflows?limit=&before= → RunList (newest first)
 *   GET  /v1/sessions/:sid/workflows/:rid          → RunDetail
 *   GET  /v1/sessions/:sid/workflows/:rid/events   SSE WorkflowEvent (id = sequence; Last-Event-ID
 *        or ?after= resumes): workflow/start, workflow/agent-start, workflow/agent-end,
 *        workflow/log, workflow/end (exactly once, the last). A run that was interrupted (its
 *        sidecar died) ends the stream with `interrupted` {reason} instead, without an id.
 *   POST /v1/sessions/:sid/workflows/:rid/cancel   CancelWorkflow → {run: RunSummary}, once settled
 *
 * The sidecar's own two routes take the same bodies (and Idempotency-Key), plus the caller's token
 * id in the `Termkeep-Principal` header on start, and answer `{runId}` (start: 201 new, 200 a
 * repeat of the key).
 */
import * as v from 'valibot'
import { utf8Length } from '../utf8.ts'
import {
  DEFAULT_WORKFLOW_CONCURRENCY,
  DEFAULT_WORKFLOW_CPU_TIME_MS,
  DEFAULT_WORKFLOW_WALL_TIME_MS,
  MAX_AGENT_PROFILES,
  MAX_CANCEL_REASON_CHARS,
  MAX_WORKFLOW_CONCURRENCY,
  MAX_WORKFLOW_CPU_TIME_MS,
  MAX_WORKFLOW_INPUT_BYTES,
  MAX_WORKFLOW_RUNS_PAGE,
  MAX_WORKFLOW_SCRIPT_BYTES,
  MAX_WORKFLOW_WALL_TIME_MS,
  MIN_WORKFLOW_TIME_LIMIT_MS,
} from '../limits.ts'
import { SessionId } from './common.ts'

/** Run ids are minted by the sidecar (`wf_…`); anything of the id alphabet is looked up. */
export const RunId = v.pipe(v.string(), v.regex(/^[\w-]{1,128}$/, 'run ids are 1–128 of [A-Za-z0-9_-]'))
export const RunParams = v.object({ sid: SessionId, rid: RunId })

/** A run's statuses (stored and sent as is); `status` moves forward only. */
export const WORKFLOW_STATUSES = ['running', 'completed', 'error', 'cancelled', 'interrupted'] as const
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number]
/** The event types of a run's log: the SSE event names of its stream. */
export const WORKFLOW_EVENT_TYPES = [
  'workflow/start',
  'workflow/agent-start',
  'workflow/agent-end',
  'workflow/log',
  'workflow/end',
] as const
export type WorkflowEventType = (typeof WORKFLOW_EVENT_TYPES)[number]
/** How a sub-agent ended. */
export const AGENT_OUTCOMES = ['completed', 'failed', 'cancelled'] as const
/** The limits that can end a run: its wall-clock time, the script's CPU time, its memory. */
export const RUN_LIMITS = ['wall-time', 'cpu-time', 'memory'] as const

/** A profile's name: what `agent(prompt, {profile})` and a run's `profile` say. */
export const ProfileName = v.pipe(v.string(), v.regex(/^[\w.-]{1,64}$/, 'profile names are 1–64 of [A-Za-z0-9_.-]'))
const EnvName = v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'environment names are [A-Za-z_][A-Za-z0-9_]*'))

/**
 * One agent profile (TERMKEEP_AGENTS): the program a sub-agent runs (argv, not a shell command
 * line) and how it gets its prompt: as its last argument, typed on its terminal's input
 * (followed by Enter and Ctrl-D), or in the environment as TERMKEEP_PROMPT. `cwd` is relative to
 * the session's directory unless absolute; `env` is added to the terminal's environment.
 */
export const AgentProfile = v.strictObject({
  command: v.pipe(
    v.array(
      v.pipe(
        v.string(),
        v.check((s) => !s.includes('\0'), 'no NUL in arguments'),
      ),
    ),
    v.minLength(1, 'command is a non-empty argv array, e.g. ["my-agent", "--print"]'),
    v.check((argv) => argv.length === 0 || argv[0].length > 0, 'the command (argv[0]) is empty'),
  ),
  prompt: v.picklist(['argument', 'stdin', 'env'], 'prompt is one of "argument", "stdin", "env"'),
  cwd: v.optional(
    v.pipe(
      v.string(),
      v.minLength(1),
      v.check((s) => !s.includes('\0'), 'no NUL in cwd'),
    ),
  ),
  env: v.optional(
    v.record(
      EnvName,
      v.pipe(
        v.string(),
        v.check((s) => !s.includes('\0'), 'no NUL in values'),
      ),
    ),
  ),
})
export type AgentProfile = v.InferOutput<typeof AgentProfile>

export const AgentProfiles = v.pipe(
  v.record(ProfileName, AgentProfile),
  v.check((profiles) => Object.keys(profiles).length <= MAX_AGENT_PROFILES, `at most ${MAX_AGENT_PROFILES} profiles`),
)
export type AgentProfiles = v.InferOutput<typeof AgentProfiles>

/** Pure: is this value JSON of at most `max` bytes? (undefined counts as absent) */
function jsonWithin(value: unknown, max: number): boolean {
  if (value === undefined) return true
  return utf8Length(JSON.stringify(value)) <= max
}

const timeLimit = (name: string, max: number) =>
  v.optional(
    v.pipe(
      v.number(),
      v.integer(`${name} is an integer (milliseconds)`),
      v.minValue(MIN_WORKFLOW_TIME_LIMIT_MS, `${name} is at least ${MIN_WORKFLOW_TIME_LIMIT_MS}`),
      v.maxValue(max, `${name} is at most ${max}`),
    ),
  )

/** A start's own time limits (each defaults to its DEFAULT_WORKFLOW_…; a run ends `error` with
 * `limit` set when one runs out). */
export const RunTimeLimits = v.strictObject({
  /** From the run's start to its end, agents' time included. */
  wallTimeMs: timeLimit('wallTimeMs', MAX_WORKFLOW_WALL_TIME_MS),
  /** The script's own CPU time and the sidecar's serving its readText() calls (not its agents'). */
  cpuTimeMs: timeLimit('cpuTimeMs', MAX_WORKFLOW_CPU_TIME_MS),
})

/** POST body. Unknown fields are refused (a misspelled option is a 400 naming it). */
export const StartWorkflow = v.strictObject({
  /** The body of an async function: top-level `await`, `return value`; `input` in scope. */
  script: v.pipe(
    v.string(),
    v.check((s) => utf8Length(s) <= MAX_WORKFLOW_SCRIPT_BYTES, `the script is at most ${MAX_WORKFLOW_SCRIPT_BYTES} bytes (UTF-8)`),
  ),
  input: v.optional(
    v.pipe(
      v.unknown(),
      v.check((i) => jsonWithin(i, MAX_WORKFLOW_INPUT_BYTES), `input is at most ${MAX_WORKFLOW_INPUT_BYTES} bytes as JSON`),
    ),
  ),
  concurrency: v.optional(
    v.pipe(
      v.number(),
      v.integer('concurrency is an integer'),
      v.minValue(1),
      v.maxValue(MAX_WORKFLOW_CONCURRENCY, `concurrency is at most ${MAX_WORKFLOW_CONCURRENCY}`),
    ),
  ),
  /** The agent profile `agent()` uses when a call names none (default: "default", or the only one). */
  profile: v.optional(ProfileName),
  limits: v.optional(RunTimeLimits),
})
export type StartWorkflow = v.InferOutput<typeof StartWorkflow>

/** What a start request decides about its run, as the run's row keeps it. */
export interface StartedAs {
  script: string
  /** JSON text; null without input. */
  input: string | null
  concurrency: number
  profile: string | null
  wallTimeLimitMs: number
  cpuTimeLimitMs: number
}

/** Pure: the run `request` asks for (an omitted `concurrency` or limit is the default it gets). */
export function startedAs(request: StartWorkflow): StartedAs {
  return {
    script: request.script,
    input: request.input === undefined ? null : JSON.stringify(request.input),
    concurrency: request.concurrency ?? DEFAULT_WORKFLOW_CONCURRENCY,
    profile: request.profile ?? null,
    wallTimeLimitMs: request.limits?.wallTimeMs ?? DEFAULT_WORKFLOW_WALL_TIME_MS,
    cpuTimeLimitMs: request.limits?.cpuTimeMs ?? DEFAULT_WORKFLOW_CPU_TIME_MS,
  }
}

/** Pure: does `request` ask for exactly the run `run` is? (a repeat of an Idempotency-Key must;
 * a row from before runs had limits holds null, which no request repeats) */
export function sameStart(run: Omit<StartedAs, 'wallTimeLimitMs' | 'cpuTimeLimitMs'> & RowLimits, request: StartWorkflow): boolean {
  const asked = startedAs(request)
  return (
    run.script === asked.script &&
    run.input === asked.input &&
    run.concurrency === asked.concurrency &&
    run.profile === asked.profile &&
    run.wallTimeLimitMs === asked.wallTimeLimitMs &&
    run.cpuTimeLimitMs === asked.cpuTimeLimitMs
  )
}

interface RowLimits {
  wallTimeLimitMs: number | null
  cpuTimeLimitMs: number | null
}

export const CancelWorkflow = v.strictObject({
  reason: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(MAX_CANCEL_REASON_CHARS))),
})
export type CancelWorkflow = v.InferOutput<typeof CancelWorkflow>

/** The sidecar's answer to start and cancel; the API then reads the run from libSQL. */
export const RunStarted = v.object({ runId: RunId })
export type RunStarted = v.InferOutput<typeof RunStarted>

export const StopReason = v.picklist(['completed', 'error', 'cancelled'])
export type StopReason = v.InferOutput<typeof StopReason>

export const RunLimit = v.picklist(RUN_LIMITS)
export type RunLimit = v.InferOutput<typeof RunLimit>

/**
 * A run's result (seed: never a rejection). `value` is the script's JSON return value (null when
 * it returned nothing), only when completed; `error` says why otherwise. `agentsStarted` counts
 * accepted agent() calls (queued ones included) on a graceful end, the started members on a
 * termination path (cancel, a script process that died).
 */
export const WorkflowResult = v.object({
  stopReason: StopReason,
  value: v.optional(v.unknown()),
  error: v.optional(v.string()),
  /** Set when a limit ended the run (stopReason `error`): its wall-clock time, the script's CPU
   * time, or the script's memory. */
  limit: v.optional(RunLimit),
  agentsStarted: v.number(),
})
export type WorkflowResult = v.InferOutput<typeof WorkflowResult>

export const AgentOutcome = v.picklist(AGENT_OUTCOMES)
export type AgentOutcome = v.InferOutput<typeof AgentOutcome>

// ── Events (data of each SSE event; `type` is the event name) ───────────────

export const RunStartData = v.object({
  run: v.object({ id: RunId, sessionId: SessionId, concurrency: v.number(), profile: v.nullable(v.string()) }),
  at: v.number(),
})
export const AgentStartData = v.object({ seq: v.number(), label: v.string(), profile: v.string(), terminal: v.string(), at: v.number() })
export const AgentEndData = v.object({ seq: v.number(), outcome: AgentOutcome, exitCode: v.nullable(v.number()), at: v.number() })
export const LogData = v.object({ message: v.string(), at: v.number() })
export const RunEndData = v.object({ result: WorkflowResult, at: v.number() })
export type RunStartData = v.InferOutput<typeof RunStartData>
export type AgentStartData = v.InferOutput<typeof AgentStartData>
export type AgentEndData = v.InferOutput<typeof AgentEndData>
export type LogData = v.InferOutput<typeof LogData>
export type RunEndData = v.InferOutput<typeof RunEndData>

export type WorkflowEvent =
  | { sequence: number; type: 'workflow/start'; data: RunStartData }
  | { sequence: number; type: 'workflow/agent-start'; data: AgentStartData }
  | { sequence: number; type: 'workflow/agent-end'; data: AgentEndData }
  | { sequence: number; type: 'workflow/log'; data: LogData }
  | { sequence: number; type: 'workflow/end'; data: RunEndData }

// ── Runs as the API answers them ────────────────────────────────────────────

export const RunStatus = v.picklist(WORKFLOW_STATUSES)
export type RunStatus = v.InferOutput<typeof RunStatus>

export const MemberState = v.picklist(['running', ...AGENT_OUTCOMES, 'interrupted'])
export type MemberState = v.InferOutput<typeof MemberState>

/** One started agent() call (a member), folded from its agent-start and agent-end events. */
export const RunMember = v.object({
  seq: v.number(),
  label: v.string(),
  profile: v.string(),
  /** The member's terminal (a terminal of the run's session). */
  terminal: v.string(),
  state: MemberState,
  exitCode: v.nullable(v.number()),
  startedAt: v.number(),
  endedAt: v.nullable(v.number()),
})
export type RunMember = v.InferOutput<typeof RunMember>

export const RunSummary = v.object({
  id: RunId,
  sessionId: SessionId,
  status: RunStatus,
  concurrency: v.number(),
  profile: v.nullable(v.string()),
  createdAt: v.number(),
  endedAt: v.nullable(v.number()),
  /** Present once the run ended (not for running or interrupted runs). */
  result: v.nullable(WorkflowResult),
  cancelReason: v.nullable(v.string()),
  /** The run's time limits as started (null for a run started before runs had them). */
  limits: v.nullable(v.object({ wallTimeMs: v.number(), cpuTimeMs: v.number() })),
  members: v.array(RunMember),
})
export type RunSummary = v.InferOutput<typeof RunSummary>

export const RunDetail = v.object({
  ...RunSummary.entries,
  script: v.string(),
  input: v.optional(v.unknown()),
  lastSequence: v.number(),
  /** The invariant check of the run's event log (common/workflow-log.ts). */
  log: v.object({ valid: v.boolean(), problem: v.optional(v.string()) }),
})
export type RunDetail = v.InferOutput<typeof RunDetail>

export const RunResponse = v.object({ run: RunSummary })

export const RunListQuery = v.strictObject({
  limit: v.optional(
    v.pipe(v.string(), v.regex(/^\d{1,4}$/, 'limit is a number'), v.transform(Number), v.minValue(1), v.maxValue(MAX_WORKFLOW_RUNS_PAGE)),
  ),
  /** A run id: list the runs started before it (the previous page's last id). */
  before: v.optional(RunId),
})

export const RunList = v.object({ runs: v.array(RunSummary), more: v.boolean() })
export type RunList = v.InferOutput<typeof RunList>

export const EventsQuery = v.strictObject({
  after: v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'after is an event sequence'), v.transform(Number))),
})

/** What `agent()` resolves with inside a script. */
export const AgentResult = v.object({
  stopReason: StopReason,
  /** The agent's result file ($TERMKEEP_RESULT_FILE) if it wrote one, else its output as plain text. */
  text: v.string(),
  truncated: v.boolean(),
  exitCode: v.nullable(v.number()),
  /** The member's terminal id. */
  terminal: v.string(),
  seq: v.number(),
})
export type AgentResult = v.InferOutput<typeof AgentResult>
