/**
 * Which tools a token sees. A tool's grants are not written down twice: they are read from the
 * guards of the routes it calls (requirementOf, on the app's own route table), so `tools/list`
 * shows exactly the tools whose routes would let the token through, and a tool over a route that
 * is not mounted fails at its first listing instead of offering what cannot work.
 */
import type { Hono } from 'hono'
import type { Authority } from '../../storage/authority.ts'
import { describe, requirementOf, satisfies, type Requirement } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import type { RouteRef, Tool } from './tool.ts'

export class Catalog {
  readonly #app: Hono<AppEnv>
  readonly #tools: readonly Tool[]
  #requirements: Map<string, Requirement> | undefined

  constructor(app: Hono<AppEnv>, tools: readonly Tool[]) {
    this.#app = app
    this.#tools = tools
  }

  /** Every route's guard requirement, by `METHOD path` (read once the app is complete). */
  #requirement(route: RouteRef): Requirement {
    if (!this.#requirements) {
      this.#requirements = new Map()
      for (const r of this.#app.routes) {
        const required = requirementOf(r.handler)
        if (required !== undefined) this.#requirements.set(`${r.method} ${r.path}`, required)
      }
    }
    const required = this.#requirements.get(`${route.method} ${route.path}`)
    if (required === undefined) throw new Error(`MCP tool over ${route.method} ${route.path}: no guarded route is mounted there`)
    return required
  }

  /** Whether every route the tool calls (of an inner list: one of them) lets the authority in. */
  allows(tool: Tool, authority: Authority): boolean {
    return tool.uses.every((use) => alternativesOf(use).some((route) => this.permits(route, authority)))
  }

  /** Whether the route's guard lets the authority in. */
  permits(route: RouteRef, authority: Authority): boolean {
    return satisfies(authority.grants, this.#requirement(route))
  }

  /** The grants a tool needs, as docs/mcp.md and its refusal spell them: `a + b`; `a or b` where
   * either does. */
  grants(tool: Tool): string {
    return spell(this.requirements(tool))
  }

  /** The grants a list of routes needs, spelled as `grants`. */
  routeGrants(routes: readonly RouteRef[]): string {
    return spell(routes.map((route) => [this.#requirement(route)]))
  }

  /** The routes' requirements of a tool (of an inner list, any one). */
  requirements(tool: Tool): Requirement[][] {
    return tool.uses.map((use) => alternativesOf(use).map((route) => this.#requirement(route)))
  }

  visible(authority: Authority): Tool[] {
    return this.#tools.filter((tool) => this.allows(tool, authority))
  }

  find(name: string): Tool | undefined {
    return this.#tools.find((tool) => tool.name === name)
  }
}

function alternativesOf(use: RouteRef | readonly RouteRef[]): readonly RouteRef[] {
  return Array.isArray(use) ? (use as readonly RouteRef[]) : [use as RouteRef]
}

/** Requirements (each a list of alternatives) as `a + b`, `a or b`. */
function spell(requirements: Requirement[][]): string {
  const parts = new Set<string>()
  for (const alternatives of requirements) {
    const [only] = alternatives
    if (alternatives.length > 1 || only === undefined) parts.add(alternatives.map(describe).join(' or '))
    else if (typeof only === 'string') parts.add(only)
    else if ('allOf' in only) for (const grant of only.allOf) parts.add(grant)
    else parts.add(describe(only))
  }
  return [...parts].join(' + ') || 'any valid token'
}
