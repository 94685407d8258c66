/**
 * For the confinement tests: runs a script in a real script process (ScriptProcess, the same
 * code path a run takes) against a stand-in host that answers every agent() with a completed
 * result and every readText() with an ordinary (non-fatal) error, and collects what it sends.
 */
import { DEFAULT_WORKFLOW_CONCURRENCY, DEFAULT_WORKFLOW_CPU_TIME_MS } from '../../schema/limits.ts'
import { probeNamespaces, ScriptProcess, type Sandbox } from '../../sidecar/workflows/process.ts'
import { FromScript, type ScriptRequest } from '../../sidecar/workflows/protocol.ts'
import { engineFiles } from '../../sidecar/workflows/quickjs.ts'
import { engineLimits, SCRIPT_LIMITS } from '../../sidecar/workflows/script-limits.ts'
import * as v from 'valibot'

/** The two ways a sidecar runs script processes: in namespaces of their own where the kernel
 * allows them (else the same as `fallback`), and without them (TERMKEEP_WORKFLOW_NAMESPACES=off). */
export const SANDBOXES: { namespaced: Sandbox; fallback: Sandbox } = {
  namespaced: { engine: engineFiles(), ...(await probeNamespaces()) },
  fallback: { engine: engineFiles(), missing: 'none wanted (test)' },
}

export interface ScriptOutcome {
  done: { stopReason: string; value?: string; error?: string }
  logs: string[]
  messages: any[]
}

export const startOf = (script: string, input?: unknown, cpuTimeMs = DEFAULT_WORKFLOW_CPU_TIME_MS): ScriptRequest => ({
  script,
  input: input === undefined ? undefined : JSON.stringify(input),
  profiles: ['default'],
  defaultProfile: 'default',
  concurrency: DEFAULT_WORKFLOW_CONCURRENCY,
  limits: SCRIPT_LIMITS,
  engine: engineLimits(cpuTimeMs),
})

/** Runs `script` (or a whole `program`) to its `done` message, or rejects when the process exits first. */
export function runInProcess(sandbox: Sandbox, start: ScriptRequest, program?: string): Promise<ScriptOutcome> {
  const messages: any[] = []
  const logs: string[] = []
  return new Promise((resolve, reject) => {
    let seq = 0
    const child: ScriptProcess = new ScriptProcess(
      start,
      (message: any) => {
        messages.push(message)
        // What the sidecar would refuse: a malformed message ends a run.
        if (!program && !v.is(FromScript, message)) reject(new Error(`malformed message: ${JSON.stringify(message)}`))
        if (message.type === 'log') logs.push(message.message)
        if (message.type === 'agent') {
          seq++
          child.send({
            type: 'agent-result',
            call: message.call,
            result: { stopReason: 'completed', text: `did ${message.prompt}`, truncated: false, exitCode: 0, terminal: `t-${seq}`, seq },
          })
        }
        if (message.type === 'read-text')
          child.send({
            type: 'read-text-result',
            call: message.call,
            error: { code: 'files/not-found', message: 'no such file', fatal: false },
          })
        if (message.type === 'done') {
          child.kill()
          resolve({ done: message, logs, messages })
        }
      },
      sandbox,
      program,
    )
    void child.exited.then((exit) => reject(new Error(`the script process exited first: ${JSON.stringify(exit)} ${child.stderr}`)))
  })
}
