/**
 * Whether this sidecar can confine workflow scripts as configured, decided once at start: the
 * engine (QuickJS in WebAssembly) must load, and the script process must start in namespaces of
 * its own (the second wall) unless the operator said otherwise. The proof is a real script
 * process running `return 1` exactly as a run would. Where it fails, no run starts
 * (`workflow/unavailable`) and health says why; there is no way to run a script outside the
 * engine, since no other engine exists.
 *
 * TERMKEEP_WORKFLOW_NAMESPACES:
 * - `required` (default): without namespaces, runs are refused;
 * - `optional`: the operator's explicit consent to run scripts without them (the engine and
 *   Node's permission model only) where the kernel does not allow them;
 * - `off`: never try them (the fallback, on purpose: tests, or reproducing that mode).
 * Health reports either way whether scripts run in namespaces.
 */
import { ConfigError } from '../../schema/config.ts'
import { WORKFLOW_SANDBOX_PROBE_MS } from './tuning.ts'
import type { WorkflowsHealth } from '../../schema/wire/health.ts'
import { type Namespaces, probeNamespaces, type Sandbox, ScriptProcess } from './process.ts'
import { ScriptCheck } from './check.ts'
import { type EngineFiles, engineFiles, loadQuickJS } from './quickjs.ts'
import { engineLimits, SCRIPT_LIMITS } from './script-limits.ts'

export const NAMESPACES_VARIABLE = 'TERMKEEP_WORKFLOW_NAMESPACES'
const MODES = ['required', 'optional', 'off'] as const
export type NamespaceMode = (typeof MODES)[number]

/** The setting's value (unset: `required`); anything else stops the sidecar with one line. */
export function namespaceMode(raw: string | undefined): NamespaceMode {
  if (raw === undefined || raw === '') return 'required'
  if ((MODES as readonly string[]).includes(raw)) return raw as NamespaceMode
  throw new ConfigError(NAMESPACES_VARIABLE, `one of ${MODES.join(', ')}`, raw)
}

/** Where runs stand on this sidecar. */
export type SandboxState =
  | { ready: true; sandbox: Sandbox; checker: ScriptCheck; health: WorkflowsHealth }
  | { ready: false; health: WorkflowsHealth }

export interface EstablishOptions {
  files?: () => EngineFiles
  namespaces?: () => Promise<Namespaces>
}

export async function establishSandbox(mode: NamespaceMode, options: EstablishOptions = {}): Promise<SandboxState> {
  const refused = (reason: string, namespaces = false): SandboxState => ({ ready: false, health: { available: false, namespaces, reason } })
  let files: EngineFiles
  try {
    files = (options.files ?? engineFiles)()
    await loadQuickJS(files)
  } catch (error) {
    return refused(`the script engine (QuickJS, WebAssembly) does not load: ${(error as Error).message}`)
  }
  const namespaces: Namespaces =
    mode === 'off' ? { missing: `${NAMESPACES_VARIABLE}=off` } : await (options.namespaces ?? probeNamespaces)()
  if (!namespaces.wrapper && mode === 'required') {
    return refused(
      `script processes cannot get namespaces of their own here: ${namespaces.missing}. Set ${NAMESPACES_VARIABLE}=optional to run scripts without them (QuickJS and Node's permission model only)`,
    )
  }
  const sandbox: Sandbox = { engine: files, ...namespaces }
  const failure = await tryScript(sandbox)
  if (failure) return refused(`a script process does not start as configured: ${failure}`, Boolean(sandbox.wrapper))
  const health: WorkflowsHealth = sandbox.wrapper
    ? { available: true, namespaces: true }
    : { available: true, namespaces: false, reason: `scripts run without namespaces of their own: ${namespaces.missing}` }
  return { ready: true, sandbox, checker: new ScriptCheck(files), health }
}

/** Runs `return 1` in a script process as a run would; why it failed, or undefined. */
function tryScript(sandbox: Sandbox): Promise<string | undefined> {
  return new Promise((resolve) => {
    const request = {
      script: 'return 1',
      profiles: [],
      concurrency: 1,
      defaultProfile: null,
      limits: SCRIPT_LIMITS,
      engine: engineLimits(WORKFLOW_SANDBOX_PROBE_MS),
    }
    const timer = setTimeout(() => end(`no answer within ${WORKFLOW_SANDBOX_PROBE_MS} ms`), WORKFLOW_SANDBOX_PROBE_MS)
    const end = (why: string | undefined) => {
      clearTimeout(timer)
      child.kill()
      resolve(why)
    }
    const child = new ScriptProcess(
      request,
      (message) => {
        const done = message as { type?: string; stopReason?: string; value?: string; error?: string }
        if (done.type !== 'done') return
        end(done.stopReason === 'completed' && done.value === '1' ? undefined : (done.error ?? 'it did not run the script'))
      },
      sandbox,
    )
    void child.exited.then((exit) =>
      end(exit.error?.message ?? (child.stderr.split('\n').at(-1) || `it exited (${exit.code ?? exit.signal})`)),
    )
  })
}

/** The one line a sidecar logs at start when scripts are refused or run without namespaces. */
export function sandboxWarning(state: SandboxState): string | undefined {
  const { health } = state
  if (!health.available) return `termkeep sidecar: warning: workflow runs are refused: ${health.reason}`
  if (!health.namespaces)
    return `termkeep sidecar: warning: ${health.reason} (${NAMESPACES_VARIABLE}); escaped code could signal this user's processes and open network connections (docs/workflows.md, "How the script is confined")`
  return undefined
}
