/**
 * Every MCP tool, as a table. A tool over one route is one `routeTool` entry: its name, the
 * route (method and path exactly as mounted), and the route's own schemas for the path
 * parameters, query and body; its grants are read from the route's guard, its JSON Schema is
 * generated from those schemas, and a call is a request through the app (dispatch.ts). Composite
 * tools (send, wait, run) live in their own files and list every route they call in `uses`.
 *
 * The tools of an area live in their own file (workflows.ts, observation.ts) and are spread into TOOLS; an SSE
 * route read to a bound is a `streamReadTool` (stream-read.ts). catalog.test.ts fails for a tool
 * whose route is not mounted, and for one missing from docs/mcp.md.
 */
import { randomId } from '../../common/crypto.ts'
import { DEFAULT_COLS, DEFAULT_ROWS } from '../../schema/limits.ts'
import { SessionId } from '../../schema/wire/common.ts'
import { type FileText, ListQuery, PathQuery, type ReadTextPage, ReadTextRequest, TextQuery } from '../../schema/wire/files.ts'
import type { ScreenProjection } from '../../schema/wire/display.ts'
import { ScreenArgs } from '../../schema/wire/mcp.ts'
import { OutputQuery, type OutputPage } from '../../schema/wire/output.ts'
import { CreateSession, CreateWorkspace, SessionListQuery } from '../../schema/wire/registry.ts'
import { CreateTerminal, TerminalParams } from '../../schema/wire/terminals.ts'
import * as v from 'valibot'
import { COMMAND_TOOLS } from './commands.ts'
import { runCommand } from './run.ts'
import { SESSION_TOOLS } from './sessions.ts'
import { sendKeys } from './send.ts'
import { fromBase64 } from '../../common/bytes.ts'
import { plainText, screenText } from './text.ts'
import { routeTool, T, textResult, type Tool } from './tool.ts'
import { waitFor } from './wait.ts'
import { OBSERVATION_TOOLS } from './observation.ts'
import { WORKFLOW_TOOLS } from './workflows.ts'

const SessionOnly = v.object({ sid: SessionId })
const F = '/v1/sessions/:sid/files'
const READ = { readOnlyHint: true, openWorldHint: false }

/** An output page's data as plain text, resizes as facts, and the cursor to continue from. */
function outputText(value: unknown) {
  const page = value as OutputPage
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true }) // a printed BOM is output too
  let text = ''
  const resizes: { sequence: number; cols: number; rows: number }[] = []
  for (const item of page.items) {
    if (item.kind === 'data') text += decoder.decode(fromBase64(item.data), { stream: true })
    else resizes.push({ sequence: item.sequence, cols: item.cols, rows: item.rows })
  }
  text += decoder.decode()
  return textResult(plainText(text), {
    next: page.next,
    end: page.end,
    items: page.items.length,
    resizes,
    ...(page.initialSize ? { initialSize: page.initialSize } : {}),
  })
}

export const TOOLS: readonly Tool[] = [
  routeTool({
    name: 'list_workspaces',
    title: 'List workspaces',
    description: "The workspaces in the user's order, each with its session ids, and the archived session ids.",
    annotations: READ,
    method: 'GET',
    path: '/v1/workspaces',
  }),
  routeTool({
    name: 'add_workspace',
    title: 'Add a workspace',
    description:
      'Register a directory (an absolute path) as a workspace, or answer the one that owns it (`created: false`). `host`: the host the directory is on (id or name, see list_hosts); needed when there are several; the same path on two hosts is two workspaces.',
    annotations: { idempotentHint: true, openWorldHint: false },
    method: 'POST',
    path: '/v1/workspaces',
    body: CreateWorkspace,
  }),
  routeTool({
    name: 'list_hosts',
    title: 'List hosts',
    description:
      'The machines (hosts) whose terminals this server reaches: id, name, version, capacity and whether each is `up`. A session lives on one host; a host that is down answers its live calls with host/unavailable.',
    annotations: READ,
    method: 'GET',
    path: '/v1/hosts',
  }),
  routeTool({
    name: 'create_session',
    title: 'Create a session',
    description:
      "Record a session with its working directory (`cwd`), or in a workspace (`workspace`: its id; the session then lives on the workspace's host, in its directory); it joins the workspace owning that directory on its host. Terminals and files belong to a session. `host`: the host (id or name, see list_hosts) it lives on; needed when there are several and no workspace says it (a host that is not the workspace's is host/mismatch).",
    annotations: { idempotentHint: true, openWorldHint: false },
    method: 'POST',
    path: '/v1/sessions',
    body: CreateSession,
  }),
  routeTool({
    name: 'list_sessions',
    title: 'List sessions',
    description:
      'Recorded sessions this token may touch, newest first, a page at a time. `workspace`: a workspace id for its sessions, or `none` for the sessions that belong to no workspace (they have terminals but no files); `cursor`: the `next` of the previous page.',
    annotations: READ,
    method: 'GET',
    path: '/v1/sessions',
    query: SessionListQuery,
  }),
  routeTool({
    name: 'list_terminals',
    title: 'List terminals',
    description: "The session's terminals, live and ended, with state and exit code.",
    annotations: READ,
    method: 'GET',
    path: '/v1/sessions/:sid/terminals',
    params: SessionOnly,
  }),
  routeTool({
    name: 'create_terminal',
    title: 'Create a terminal',
    description: `Start an interactive shell in a new terminal of the session (default ${DEFAULT_COLS}×${DEFAULT_ROWS}; \`tid\` generated when absent; the same tid again answers the existing one).`,
    annotations: { idempotentHint: true, openWorldHint: false },
    method: 'PUT',
    path: T,
    params: TerminalParams,
    body: CreateTerminal,
    defaults: { tid: () => randomId('t'), cols: () => DEFAULT_COLS, rows: () => DEFAULT_ROWS },
  }),
  runCommand,
  ...COMMAND_TOOLS,
  sendKeys,
  routeTool({
    name: 'read_screen',
    title: 'Read the screen',
    description:
      'What the terminal shows now, as plain text (the viewport; `history: true` adds the history tail above it), then the cursor, size and output sequence.',
    annotations: READ,
    method: 'GET',
    path: `${T}/screen`,
    params: TerminalParams,
    own: ScreenArgs,
    present: (value, args) => {
      const { text, meta } = screenText(value as ScreenProjection, (args.own as v.InferOutput<typeof ScreenArgs>).history)
      return textResult(text, meta)
    },
  }),
  waitFor,
  routeTool({
    name: 'read_output',
    title: 'Read output',
    description:
      'A page of everything the terminal printed after the cursor `after` (0: from the start), as plain text, and `next`, the cursor to read on from.',
    annotations: READ,
    method: 'GET',
    path: `${T}/output`,
    params: TerminalParams,
    query: OutputQuery,
    present: outputText,
  }),
  routeTool({
    name: 'close_terminal',
    title: 'Close a terminal',
    description: 'Close a terminal: its processes are ended; closing again succeeds.',
    annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    method: 'DELETE',
    path: T,
    params: TerminalParams,
  }),
  routeTool({
    name: 'read_file',
    title: 'Read a file page',
    description: "Lines of a text file in the session's workspace: `offset` is the 1-based first line, `limit` the count (at most 5,000).",
    annotations: READ,
    method: 'GET',
    path: `${F}/text`,
    params: SessionOnly,
    query: TextQuery,
    present: (value) => {
      const { text, ...facts } = value as v.InferOutput<typeof FileText>
      return textResult(text, facts)
    },
  }),
  routeTool({
    name: 'list_directory',
    title: 'List a directory',
    description: "The entries of a directory in the session's workspace ('' is its root).",
    annotations: READ,
    method: 'GET',
    path: `${F}/list`,
    params: SessionOnly,
    query: ListQuery,
  }),
  routeTool({
    name: 'stat_file',
    title: 'Stat a file',
    description: 'Kind, size and opaque version of a path in the workspace.',
    annotations: READ,
    method: 'GET',
    path: `${F}/stat`,
    params: SessionOnly,
    query: PathQuery,
  }),
  routeTool({
    name: 'read_text',
    title: 'Files.readText',
    description:
      'A page of a workspace file, `attachment:ID` or `tool-result:ID` (`address`); to continue, send the `next` it returned back whole instead of an address.',
    annotations: READ,
    method: 'POST',
    path: '/v1/sessions/:sid/read-text',
    params: SessionOnly,
    body: ReadTextRequest,
    present: (value) => {
      const { text, ...facts } = value as v.InferOutput<typeof ReadTextPage>
      return textResult(text, facts)
    },
  }),
  ...SESSION_TOOLS,
  ...WORKFLOW_TOOLS,
  ...OBSERVATION_TOOLS,
]
