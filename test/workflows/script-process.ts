/**
 * For the confinement tests: runs a script in a real script process (ScriptProcess, the same
 * code path a run takes) against a stand-in host that answers every agent() with a completed
 * result and every readText() with an ordinary (non-fatal) error, and collects what it sends.
 */
import { SCRIPT_LIMITS } from '../../sidecar/workflows/run.ts'
import { ScriptProcess, type Sandbox } from '../../sidecar/workflows/process.ts'
import type { ScriptStart } from '../../sidecar/workflows/protocol.ts'

export interface ScriptOutcome {
  done: { stopReason: string; value?: string; error?: string }
  logs: string[]
  messages: any[]
}

export const startOf = (script: string, input?: unknown): ScriptStart => ({
  script,
  input: input === undefined ? undefined : JSON.stringify(input),
  profiles: ['default'],
  defaultProfile: 'default',
  limits: SCRIPT_LIMITS,
})

/** Runs `script` (or a whole `program`) to its `done` message, or rejects when the process exits first. */
export function runInProcess(sandbox: Sandbox, start: ScriptStart, program?: string): Promise<ScriptOutcome> {
  const messages: any[] = []
  const logs: string[] = []
  return new Promise((resolve, reject) => {
    let seq = 0
    const child: ScriptProcess = new ScriptProcess(
      start,
      (message: any) => {
        messages.push(message)
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
