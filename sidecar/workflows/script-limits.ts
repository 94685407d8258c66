/** The limits a run's script process applies, from the named constants the host enforces too. */
import {
  MAX_AGENT_LABEL_CHARS,
  MAX_UTF16_UNITS_PER_GRAPHEME,
  MAX_AGENT_PROMPT_BYTES,
  MAX_AGENTS_PER_RUN,
  MAX_WORKFLOW_ERROR_BYTES,
  MAX_WORKFLOW_ITEMS,
  MAX_WORKFLOW_LOG_BYTES,
  MAX_WORKFLOW_LOG_MESSAGE_BYTES,
  MAX_WORKFLOW_LOG_MESSAGES,
  MAX_WORKFLOW_RESULT_BYTES,
  MAX_WORKFLOW_RESULT_DEPTH,
  WORKFLOW_SCRIPT_MEMORY_BYTES,
  WORKFLOW_SCRIPT_STACK_BYTES,
} from '../../schema/limits.ts'
import type { EngineLimits, ScriptLimits } from './protocol.ts'
import { WORKFLOW_READS_IN_FLIGHT } from './tuning.ts'

export const SCRIPT_LIMITS: ScriptLimits = {
  maxAgents: MAX_AGENTS_PER_RUN,
  maxItems: MAX_WORKFLOW_ITEMS,
  maxPromptBytes: MAX_AGENT_PROMPT_BYTES,
  maxLogMessageBytes: MAX_WORKFLOW_LOG_MESSAGE_BYTES,
  maxLogBytes: MAX_WORKFLOW_LOG_BYTES,
  maxLogMessages: MAX_WORKFLOW_LOG_MESSAGES,
  maxResultBytes: MAX_WORKFLOW_RESULT_BYTES,
  maxResultDepth: MAX_WORKFLOW_RESULT_DEPTH,
  maxErrorBytes: MAX_WORKFLOW_ERROR_BYTES,
  readsInFlight: WORKFLOW_READS_IN_FLIGHT,
  // The host's own first check of a label (titleSchema).
  maxLabelUnits: MAX_AGENT_LABEL_CHARS * MAX_UTF16_UNITS_PER_GRAPHEME,
  // Beyond any valid request: a path of MAX_PATH_CHARS (each at most 6 bytes as JSON), a cursor of 8 KiB.
  maxReadRequestBytes: 64 * 1024,
}

/** What the engine's WebAssembly memory starts with (the build's own default, 16 MiB). */
export const ENGINE_INITIAL_MEMORY_BYTES = 16 * 1024 * 1024

export const engineLimits = (cpuTimeMs: number): EngineLimits => ({
  cpuTimeMs,
  memoryBytes: WORKFLOW_SCRIPT_MEMORY_BYTES,
  initialBytes: ENGINE_INITIAL_MEMORY_BYTES,
  stackBytes: WORKFLOW_SCRIPT_STACK_BYTES,
})
