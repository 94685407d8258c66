/** `termkeep ls`: workspaces in the user's order, their sessions, and each session's terminals. */
import { parseArgs } from 'node:util'
import { printable } from '../schema/wire/common.ts'
import type { TerminalInfo } from '../schema/wire/terminals.ts'
import { ApiError } from '../web/client/api.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { HELP_OPTION, printedHelp } from './usage.ts'

const USAGE = `usage: termkeep ls [--url URL] [--token TOKEN]

  Lists workspaces in the user's order, their sessions, and each session's terminals.

${REMOTE_USAGE}`

export async function lsCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values } = parseArgs({ args, options: { ...REMOTE_OPTIONS, ...HELP_OPTION }, allowPositionals: false })
  if (printedHelp(values, USAGE, out)) return 0
  const client = remoteClient(values)
  const registry = await client.registry()
  const archived = new Set(registry.archivedSessionIds)
  if (registry.workspaces.length === 0) out.write('no workspaces (add one on the web page or with POST /v1/workspaces)\n')
  for (const workspace of registry.workspaces) {
    out.write(`${printable(workspace.title)}  ${printable(workspace.path)}  [${workspace.id}]\n`)
    const sessions = await Promise.all(
      workspace.sessionIds.map(async (id) => {
        const [session, terminals] = await Promise.all([
          client.session(id).catch(() => undefined),
          client.terminals(id).catch((error: unknown) => (error instanceof ApiError ? error : Promise.reject(error))),
        ])
        return { id, session, terminals }
      }),
    )
    for (const { id, session, terminals } of sessions) {
      const title = session?.title ? `  "${printable(session.title)}"` : ''
      out.write(`  session ${id}${title}${archived.has(id) ? '  (archived)' : ''}\n`)
      if (terminals instanceof ApiError) {
        out.write(`    (terminals not listed: ${terminals.message})\n`)
        continue
      }
      if (terminals.length === 0) out.write('    (no terminals)\n')
      for (const t of terminals as TerminalInfo[]) {
        out.write(`    ${t.id}  ${t.state}  ${t.cols}x${t.rows}  ${printable(t.shell.name)}  "${printable(t.title)}"\n`)
      }
    }
  }
  return 0
}
