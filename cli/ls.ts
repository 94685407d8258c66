/**
 * `termkeep ls`: workspaces in the user's order with their sessions, then the sessions that belong
 * to no workspace, and each session's terminals with the program in their foreground (as tmux's
 * list-panes shows pane_current_command). Sessions come from one listing (`GET /v1/sessions`), not
 * one request each.
 */
import { parseArgs } from 'node:util'
import { printable } from '../schema/wire/common.ts'
import type { Session, Workspace } from '../schema/wire/registry.ts'
import type { TerminalInfo } from '../schema/wire/terminals.ts'
import { ApiError, type TermkeepClient } from '../web/client/api.ts'
import { endedWord, isLive, programsOf, sessionMarker } from '../web/client/labels.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { exactArgs, HELP_OPTION, JSON_OPTION, printedHelp, printJson } from './usage.ts'
import { self } from './self.ts'

const USAGE = `usage: termkeep ls [--json]

  Lists workspaces in the user's order with their sessions, then the sessions that belong to no
  workspace, and each session's terminals (with terminals:control or terminals:display).

  --json                    one JSON document: {workspaces: [{…, sessions: [{…, terminals}]}],
                            standalone: [{…, terminals}], archivedSessionIds}; terminals is null
                            where the token may not list them
${REMOTE_USAGE}`

/** A session with its terminals, or null (and why) when they could not be listed. */
type ListedSession = Session & { terminals: TerminalInfo[] | null; terminalsError?: string }

async function withTerminals(client: TermkeepClient, session: Session): Promise<ListedSession> {
  try {
    return { ...session, terminals: await client.terminals(session.id) }
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 401) throw error
    return { ...session, terminals: null, terminalsError: `${error.message} (${error.code})` }
  }
}

/** Terminal listings in flight at once (one request per session). */
const LISTING_CONCURRENCY = 8

async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const at = next++
      results[at] = await fn(items[at])
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

/**
 * A session (its marker and what runs in it) and its terminals; a standalone one also shows its
 * directory. A terminal's line: id, state (how it ended, once it did), size, the program in its
 * foreground (`-` once it ended), title.
 */
function writeSession(out: NodeJS.WritableStream, session: ListedSession, showCwd: boolean): void {
  const title = session.title ? `  "${printable(session.title)}"` : ''
  const where = showCwd ? `  ${printable(session.cwd)}` : ''
  const label = session.terminals === null ? '' : `  ${sessionMarker(session.terminals)}`
  const running = session.terminals === null ? '' : programsOf(session.terminals)
  out.write(
    `  session ${session.id}${session.name ? `  (${session.name})` : ''}${title}${where}${label}${running ? `: ${printable(running)}` : ''}${session.archived ? '  (archived)' : ''}\n`,
  )
  if (session.terminals === null) return void out.write(`    (terminals not listed: ${session.terminalsError})\n`)
  if (session.terminals.length === 0) out.write('    (no terminals)\n')
  for (const t of session.terminals) {
    const live = isLive(t)
    const state = live ? t.state : `${t.state}${endedWord(t) === t.state ? '' : ` (${endedWord(t)})`}`
    const program = live ? (t.foregroundCommand ?? t.shell.name) : '-'
    const named = t.name ? `  (${t.name})` : ''
    out.write(`    ${t.id}${named}  ${state}  ${t.cols}x${t.rows}  ${printable(program)}  "${printable(t.title)}"\n`)
  }
}

export async function lsCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, ...JSON_OPTION },
    allowPositionals: true,
  })
  if (printedHelp(values, USAGE, out)) return 0
  exactArgs(positionals, [], 'ls')
  const client = remoteClient(values)
  const [registry, recorded] = await Promise.all([client.registry(), client.sessions()])
  const listed = await mapLimited(recorded, LISTING_CONCURRENCY, (session) => withTerminals(client, session))
  const sessions = new Map(listed.map((s): [string, ListedSession] => [s.id, s]))
  const workspaces = registry.workspaces.map((w: Workspace) => ({ ...w, sessions: w.sessionIds.flatMap((id) => sessions.get(id) ?? []) }))
  const standalone = [...sessions.values()].filter((s) => s.workspaceId === null)
  if (values.json) {
    printJson(out, { workspaces, standalone, archivedSessionIds: registry.archivedSessionIds })
    return 0
  }
  if (workspaces.length === 0 && standalone.length === 0) {
    out.write(
      `no workspaces and no sessions (\`${self()} workspace add DIR\` registers a directory; \`${self()} new\` starts a terminal)\n`,
    )
  }
  for (const workspace of workspaces) {
    out.write(`${printable(workspace.title)}  ${printable(workspace.path)}  [${workspace.id}]\n`)
    if (workspace.sessions.length === 0) out.write('  (no sessions)\n')
    for (const session of workspace.sessions) writeSession(out, session, false)
  }
  if (standalone.length > 0) {
    out.write('(in no workspace)\n')
    for (const session of standalone) writeSession(out, session, true)
  }
  return 0
}
