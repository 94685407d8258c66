/**
 * Agent profiles: what a sub-agent runs. TERMKEEP_AGENTS is inline JSON (it starts with `{`) or the
 * path of a JSON file, `{"name": {"command": [...argv], "prompt": "argument"|"stdin"|"env",
 * "cwd"?, "env"?}}`. Read and validated once, at sidecar start; a bad value stops the start with
 * one line naming the variable (like every other setting, schema/config.ts).
 */
import { readFileSync, statSync } from 'node:fs'
import * as v from 'valibot'
import { ConfigError } from '../../schema/config.ts'
import { MAX_AGENT_PROFILES_FILE_BYTES } from '../../schema/limits.ts'
import { AgentProfiles, type AgentProfile } from '../../schema/wire/workflows.ts'

export const AGENTS_VARIABLE = 'TERMKEEP_AGENTS'

export class Profiles {
  readonly #byName: ReadonlyMap<string, AgentProfile>

  constructor(profiles: AgentProfiles = {}) {
    this.#byName = new Map(Object.entries(profiles))
  }

  get names(): string[] {
    return [...this.#byName.keys()]
  }

  get(name: string): AgentProfile | undefined {
    return this.#byName.get(name)
  }

  /** The profile an agent() call without one uses: the run's, else "default", else the only one. */
  fallback(runProfile: string | null): string | undefined {
    if (runProfile !== null) return runProfile
    if (this.#byName.has('default')) return 'default'
    return this.#byName.size === 1 ? this.names[0] : undefined
  }
}

/** Parses TERMKEEP_AGENTS; throws a one-line ConfigError. Unset or empty: no profiles. */
export function loadProfiles(raw: string | undefined, read: (path: string) => string = readSmallFile): Profiles {
  if (raw === undefined || raw.trim() === '') return new Profiles()
  const inline = raw.trim().startsWith('{')
  const shown = raw.length > 80 ? `${raw.slice(0, 77)}...` : raw
  const fail: (why: string) => never = (why) => {
    throw new ConfigError(AGENTS_VARIABLE, why, shown)
  }
  let text = raw
  if (!inline) {
    try {
      text = read(raw)
    } catch (error) {
      fail(`inline JSON, or a readable JSON file (${(error as Error).message})`)
    }
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    fail(`${inline ? 'it' : 'the file'} is not JSON (${(error as Error).message})`)
  }
  const result = v.safeParse(AgentProfiles, json)
  if (!result.success) {
    const issue = result.issues[0]
    const path = issue.path?.map((p) => String(p.key)).join('.')
    fail(`{"name": {"command": [argv...], "prompt": "argument"|"stdin"|"env", "cwd"?, "env"?}}; ${path ? `${path}: ` : ''}${issue.message}`)
  }
  return new Profiles(result.output)
}

function readSmallFile(path: string): string {
  if (statSync(path).size > MAX_AGENT_PROFILES_FILE_BYTES) throw new Error(`larger than ${MAX_AGENT_PROFILES_FILE_BYTES} bytes`)
  return readFileSync(path, 'utf8')
}
