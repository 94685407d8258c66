/**
 * Messages between the sidecar (host) and a run's script process, over the child's channel (channel.ts).
 * The script process is not trusted: everything it sends is validated here before the host acts
 * on it, and every limit it checks for a clear message is checked again by the host. It has at
 * most the run's concurrency of agent() calls and WORKFLOW_READS_IN_FLIGHT readText() calls out
 * at the host at once (the script's others wait in the guest, in the script's own memory): one
 * that sends more is ended.
 */
import * as v from 'valibot'
import type { ReadTextPage } from '../../schema/wire/files.ts'
import type { AgentResult } from '../../schema/wire/workflows.ts'

/** Limits the script process applies (the same named constants the host enforces). */
export interface ScriptLimits {
  maxAgents: number
  maxItems: number
  maxPromptBytes: number
  maxLogMessageBytes: number
  maxLogBytes: number
  maxLogMessages: number
  maxResultBytes: number
  maxResultDepth: number
  maxErrorBytes: number
  /** readText() requests one run has out at the host at once (WORKFLOW_READS_IN_FLIGHT). */
  readsInFlight: number
  /** Longer arguments are refused in the guest, so that every message stays far below
   * WORKFLOW_SCRIPT_MESSAGE_MAX_BYTES: a label's UTF-16 units, a readText() request as JSON. */
  maxLabelUnits: number
  maxReadRequestBytes: number
}

/** What the script process's host side applies to the engine (the sidecar checks them too). */
export interface EngineLimits {
  /** The script's CPU time, counted from when the engine starts running it. */
  cpuTimeMs: number
  /** The engine's whole WebAssembly memory: its maximum, and what it starts with. */
  memoryBytes: number
  initialBytes: number
  stackBytes: number
}

/** What the first message carries besides the program. */
export interface ScriptStart {
  script: string
  /** The run's input as JSON text; absent when the run has none. */
  input?: string
  profiles: string[]
  defaultProfile: string | null
  /** The run's concurrency: agent() calls out at the host at once. */
  concurrency: number
  limits: ScriptLimits
  engine: EngineLimits & {
    /** file: URLs of the engine's ES modules (quickjs.ts EngineFiles; ScriptProcess sets them). */
    core: string
    variant: string
  }
}

/** A start as a run asks for it: ScriptProcess adds where the engine is. */
export type ScriptRequest = Omit<ScriptStart, 'engine'> & { engine: EngineLimits }

/** A hook's failure as the script sees it: `fatal` ones are WorkflowErrors (see program.ts). */
export interface HookError {
  code: string
  message: string
  fatal: boolean
}

/** Host → script process. The first message starts the run (`program` is what it evaluates). */
export type ToScript =
  | ({ type: 'start'; program: string } & ScriptStart)
  | { type: 'agent-result'; call: number; result?: AgentResult; error?: HookError }
  | { type: 'read-text-result'; call: number; page?: ReadTextPage; error?: HookError }

const Call = v.pipe(v.number(), v.safeInteger(), v.minValue(1))

/** Script process → host. */
export const FromScript = v.variant('type', [
  v.strictObject({
    type: v.literal('agent'),
    call: Call,
    prompt: v.string(),
    label: v.optional(v.string()),
    profile: v.optional(v.string()),
  }),
  v.strictObject({ type: v.literal('read-text'), call: Call, request: v.unknown() }),
  v.strictObject({ type: v.literal('log'), message: v.string() }),
  v.strictObject({
    type: v.literal('done'),
    stopReason: v.picklist(['completed', 'error']),
    /** completed: the return value as JSON text. */
    value: v.optional(v.string()),
    /** error: why. */
    error: v.optional(v.string()),
    /** error: the limit the script ran into (the wall clock is the sidecar's own). */
    limit: v.optional(v.picklist(['cpu-time', 'memory'])),
  }),
])
export type FromScript = v.InferOutput<typeof FromScript>
