/**
 * What a tool is: a name, a description, the routes it acts through (its grants are theirs, read
 * from the routes' guards: catalog.ts), its input (input.ts) and what it does with the arguments.
 * `routeTool` is the common kind: one route, its answer passed back as JSON or as text.
 */
import type { CallToolResult, ToolAnnotations } from './sdk.ts'
import type { GenericSchema } from 'valibot'
import type { TermkeepError } from '../../schema/errors.ts'
import type { Dispatcher } from './dispatch.ts'
import { toolInput, type InputLayout, type SplitArgs, type ToolInput } from './input.ts'

export type { CallToolResult }

/** The terminal route as mounted; the tools over a terminal call it and the routes below it. */
export const T = '/v1/sessions/:sid/terminals/:tid'

export interface RouteRef {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** The path exactly as mounted. */
  path: string
}

export interface ToolContext {
  /** Requests through the app under the caller's token; its signal ends with the call. */
  call: Dispatcher
  /** Refuses (auth/forbidden, naming the grants) unless the caller may call every route: for a
   * route only some calls of a tool use, checked before the tool's first step. */
  need(routes: readonly RouteRef[], purpose: string): void
  /** Test knobs (AppDeps.tuning); production uses the named limits. */
  tuning?: { retryMs?: number }
}

export interface Tool {
  name: string
  title: string
  description: string
  /** The routes it calls: a token sees the tool when it may call each (of an inner list, one). */
  uses: readonly (RouteRef | readonly RouteRef[])[]
  input: ToolInput
  annotations?: ToolAnnotations
  run(args: SplitArgs, ctx: ToolContext): Promise<CallToolResult>
}

/** A JSON answer: as text for the model, and as structured content. */
export function jsonResult(value: unknown): CallToolResult {
  const structured = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : { value }
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: structured }
}

/** Text an agent reads (a screen, output, a file page) first, then its facts as JSON. */
export function textResult(text: string, facts: Record<string, unknown>): CallToolResult {
  return {
    content: [
      { type: 'text', text },
      { type: 'text', text: JSON.stringify(facts) },
    ],
  }
}

/** A refusal or failure: termkeep's `{error:{code,message,…}}`, as a tool error. */
export function errorResult(error: TermkeepError): CallToolResult {
  const body = error.toBody()
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: { ...body } }
}

export interface RouteToolSpec extends Omit<InputLayout, 'own'>, RouteRef {
  name: string
  title: string
  description: string
  annotations?: ToolAnnotations
  /** Arguments of the tool besides the route's, passed to `present` (e.g. whether to show history). */
  own?: GenericSchema
  /** How the route's answer is shown (default: as JSON). */
  present?: (value: unknown, args: SplitArgs) => CallToolResult
}

/** A tool that is one route: its arguments are the route's parameters, query and body. */
export function routeTool(spec: RouteToolSpec): Tool {
  const { method, path } = spec
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    annotations: spec.annotations,
    uses: [{ method, path }],
    input: toolInput(spec),
    async run(args, ctx) {
      const value = await ctx.call.json(method, path, { params: args.params, query: args.query, body: args.body })
      return (spec.present ?? jsonResult)(value, args)
    },
  }
}
