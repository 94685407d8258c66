/**
 * Each terminal's plain screen as an MCP resource, `termkeep://sessions/{sid}/terminals/{tid}/screen`,
 * read through `GET …/screen` like the `read_screen` tool. `resources/list` names the live
 * terminals of the sessions the token can list (workspaces, then each session's terminals).
 *
 * No `resources/subscribe`: `/mcp` is stateless (any API instance answers any request), so no
 * stream outlives a request to carry change notifications. The capability says so
 * (`subscribe: false`); `wait_for` is the event-driven way to learn that a screen changed.
 */
import { MCP_MAX_LISTED_RESOURCES, SESSION_ID_PATTERN, TERMINAL_ID_PATTERN } from '../../schema/limits.ts'
import type { ScreenProjection } from '../../schema/wire/display.ts'
import type { WorkspaceList } from '../../schema/wire/registry.ts'
import type { TerminalList } from '../../schema/wire/terminals.ts'
import { TermkeepError } from '../../schema/errors.ts'
import type { Dispatcher } from './dispatch.ts'
import type { ReadResourceResult, Resource, ResourceTemplate } from './sdk.ts'
import { screenText } from './text.ts'
import { T } from './tool.ts'

export const SCREEN_TEMPLATE = 'termkeep://sessions/{sid}/terminals/{tid}/screen'
const SCREEN = `${T}/screen`
const id = (pattern: RegExp) => pattern.source.replace(/^\^|\$$/g, '')
const SCREEN_URI = new RegExp(`^termkeep://sessions/(${id(SESSION_ID_PATTERN)})/terminals/(${id(TERMINAL_ID_PATTERN)})/screen$`)
const LIVE = new Set(['starting', 'running', 'exited'])

export const screenUri = (sid: string, tid: string) => `termkeep://sessions/${sid}/terminals/${tid}/screen`

export const TEMPLATES: ResourceTemplate[] = [
  {
    uriTemplate: SCREEN_TEMPLATE,
    name: 'terminal-screen',
    title: 'Terminal screen',
    description: "A live terminal's screen as plain text (the history tail and the viewport).",
    mimeType: 'text/plain',
  },
]

/** Terminal screens of the sessions this token can list; nothing when it may not list them. */
export async function listScreens(call: Dispatcher): Promise<Resource[]> {
  let workspaces: WorkspaceList
  try {
    workspaces = await call.json<WorkspaceList>('GET', '/v1/workspaces')
  } catch (error) {
    if (error instanceof TermkeepError && error.code === 'auth/forbidden') return []
    throw error
  }
  const sessions = [...new Set(workspaces.workspaces.flatMap((w) => w.sessionIds))]
  const resources: Resource[] = []
  for (const sid of sessions) {
    if (resources.length >= MCP_MAX_LISTED_RESOURCES) break
    let list: TerminalList
    try {
      list = await call.json<TerminalList>('GET', '/v1/sessions/:sid/terminals', { params: { sid } })
    } catch (error) {
      if (error instanceof TermkeepError && (error.code === 'auth/forbidden' || error.code === 'session/not-found')) continue
      throw error
    }
    for (const terminal of list.terminals.filter((t) => LIVE.has(t.state))) {
      resources.push({ uri: screenUri(sid, terminal.id), name: `${sid}/${terminal.id}`, title: terminal.title, mimeType: 'text/plain' })
    }
  }
  return resources.slice(0, MCP_MAX_LISTED_RESOURCES)
}

export async function readScreen(call: Dispatcher, uri: string): Promise<ReadResourceResult> {
  const match = SCREEN_URI.exec(uri)
  if (!match) throw new TermkeepError('route/not-found', `no resource ${uri}; screens are ${SCREEN_TEMPLATE}`)
  const screen = await call.json<ScreenProjection>('GET', SCREEN, { params: { sid: match[1]!, tid: match[2]! } })
  return { contents: [{ uri, mimeType: 'text/plain', text: screenText(screen, true).text }] }
}
