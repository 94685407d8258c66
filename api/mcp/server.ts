/**
 * The MCP server of one `/mcp` request (stateless: a fresh low-level SDK `Server` per request,
 * nothing kept between them). tools/list filters the catalog by the caller's grants; tools/call
 * runs a tool whose every route the caller may call, and turns any failure into a tool error
 * carrying termkeep's `{error:{code,message}}`; resources serve terminal screens.
 */
import { TermkeepError } from '../../schema/errors.ts'
import { isDatabaseUnavailable } from '../../storage/unavailable.ts'
import type { Authority } from '../../storage/authority.ts'
import type { Catalog } from './catalog.ts'
import type { Dispatcher } from './dispatch.ts'
import { resolveNames } from './names.ts'
import { listScreens, readScreen, TEMPLATES } from './resources.ts'
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  Server,
  type CallToolResult,
  type jsonSchemaValidator,
} from './sdk.ts'
import { errorResult, type RouteRef, type ToolContext } from './tool.ts'

/**
 * The SDK validates with a JSON Schema validator only what a client answers to a server's
 * elicitation request, and termkeep's server never sends one. Passing this instead of the SDK's
 * default keeps Ajv from being constructed at all (it compiles schemas with `new Function`,
 * which Workers forbid); wrangler.toml stubs the `ajv` import out of the Workers bundle.
 */
const NO_ELICITATION: jsonSchemaValidator = {
  getValidator: () => () => ({ valid: false, data: undefined, errorMessage: 'termkeep does not ask clients for input' }),
}

export interface McpCall {
  catalog: Catalog
  authority: Authority
  /** A dispatcher for the caller's token whose requests end with `signal`. */
  dispatcher(signal: AbortSignal): Dispatcher
  /** The HTTP request's signal: the client left. */
  requestSignal: AbortSignal
  tuning?: ToolContext['tuning']
}

export const INSTRUCTIONS =
  'termkeep keeps terminals: every byte recorded, every screen kept. Typical use: run_command for one command and its exit code; ' +
  'or create_terminal, send_keys (text, then keys such as Enter), wait_for (a pattern on the screen, quiet output, or the exit), read_screen. ' +
  'send_keys never takes the keyboard from a person who controls the terminal unless takeControl is true. ' +
  'To keep state between commands (cd, export, a virtualenv), create_terminal once and run_in_terminal in it: each call answers the exit code and output; ' +
  'list_commands and command_output read what any shell ran. Tools take a session or terminal name wherever they take an id; find looks them up. ' +
  'Workflows: run_workflow (wait: true for its result), workflow_events from a cursor (pass next back as after), workflow_status, cancel_workflow. ' +
  'Observing an agent in a terminal: observe_context (the foreground program), observe_resolve_home_directory, observe_list_directory (the last entry is the newest), ' +
  'observe_read_json_line, observe_follow from a cursor (pass next back as after). ' +
  'This endpoint is stateless: resources/subscribe is not offered; use wait_for to wait for a change.'

/** Any failure as termkeep's error; a bug is logged and shown as internal/error, never thrown. */
function known(error: unknown, what: string): TermkeepError {
  if (error instanceof TermkeepError) return error
  if (isDatabaseUnavailable(error)) return new TermkeepError('database/unavailable', 'the database is not answering; try again')
  console.error(`termkeep api: MCP ${what} failed`, error)
  return new TermkeepError('internal/error', 'internal error')
}

/** A JSON-RPC error as the SDK sends what a handler throws (`code`, `message`, `data`). Not an
 * McpError: its message carries an "MCP error -32602:" prefix, which a client's McpError adds again. */
function rpcFailure(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, ...(data === undefined ? {} : { data }) })
}

/** A failure of a request that has no error result of its own (resources) as a JSON-RPC error. */
function rpcError(error: TermkeepError): Error {
  const code = error.code.endsWith('/not-found') ? -32002 : error.status < 500 ? ErrorCode.InvalidParams : ErrorCode.InternalError
  return rpcFailure(code, `${error.code}: ${error.message}`, error.toBody())
}

export function mcpServer({ catalog, authority, dispatcher, requestSignal, tuning }: McpCall): Server {
  const server = new Server(
    { name: 'termkeep', version: '1' },
    {
      capabilities: { tools: { listChanged: false }, resources: { subscribe: false, listChanged: false } },
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: NO_ELICITATION,
    },
  )

  /** Runs `work` with a dispatcher whose requests (and streams) end when it does. */
  async function withCall<T>(extraSignal: AbortSignal, work: (call: Dispatcher) => Promise<T>): Promise<T> {
    const done = new AbortController()
    const signal = AbortSignal.any([extraSignal, requestSignal, done.signal])
    try {
      return await work(dispatcher(signal))
    } finally {
      done.abort()
    }
  }

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: catalog.visible(authority).map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: tool.input.schema,
      ...(tool.annotations ? { annotations: tool.annotations } : {}),
    })),
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = catalog.find(request.params.name)
    if (!tool) throw rpcFailure(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`)
    if (!catalog.allows(tool, authority)) {
      // The routes' own requirements, checked before anything runs: a composite tool must not do
      // its first step when a later one would be refused.
      const needed = catalog.grants(tool)
      return errorResult(
        new TermkeepError('auth/forbidden', `this token lacks the grants of ${tool.name}: ${needed}`, { required: needed }),
      )
    }
    return withCall(extra.signal, async (call) => {
      try {
        const need = (routes: readonly RouteRef[], purpose: string) => {
          if (routes.every((route) => catalog.permits(route, authority))) return
          const needed = catalog.routeGrants(routes)
          throw new TermkeepError('auth/forbidden', `${purpose} needs ${needed}, which this token lacks`, { required: needed })
        }
        const args = await resolveNames(call, request.params.arguments)
        return await tool.run(tool.input.split(args), { call, need, tuning })
      } catch (error) {
        return errorResult(known(error, `tool ${tool.name}`))
      }
    })
  })

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: TEMPLATES }))

  server.setRequestHandler(ListResourcesRequestSchema, (_request, extra) =>
    withCall(extra.signal, async (call) => {
      try {
        return { resources: await listScreens(call) }
      } catch (error) {
        throw rpcError(known(error, 'resources/list'))
      }
    }),
  )

  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
    withCall(extra.signal, async (call) => {
      try {
        return await readScreen(call, request.params.uri)
      } catch (error) {
        throw rpcError(known(error, 'resources/read'))
      }
    }),
  )

  return server
}
