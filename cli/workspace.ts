/**
 * `termkeep workspace add DIR [--title T] | ls | rename ID TITLE | rm ID`: the workspace registry
 * from a shell, as the page's sidebar does it. A directory is a path on the server's machine
 * (resolved against this directory when relative, as `termkeep new --cwd` does).
 */
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { printable } from '../schema/wire/common.ts'
import type { Workspace } from '../schema/wire/registry.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { exactArgs, HELP_OPTION, JSON_OPTION, printedHelp, printJson, UsageError } from './usage.ts'
import { self } from './self.ts'

const USAGE = `usage: termkeep workspace add <dir> [--title TITLE] [--host HOST]
       termkeep workspace ls [--json]
       termkeep workspace rename <id> <title>
       termkeep workspace rm <id>

  add      registers a directory (on a host: the server's machine unless --host names
           another) as a workspace; sessions whose directory it is join it. A directory
           already registered on that host answers its workspace.
  ls       workspaces in the user's order, with their ids and session counts (and, with
           several hosts, the host each is on)
  rename   gives a workspace another (unique) title
  rm       unregisters a workspace: nothing on disk changes and its sessions stay recorded

  --title TITLE             the title (default: the directory's name)
  --host HOST               the host the directory is on (id or name, termkeep hosts); needed
                            when the server reaches several. The same path on two hosts is two
                            workspaces
  --json                    print the server's answer as JSON, for scripts
${REMOTE_USAGE}`

/** "src  /home/me/src  [ws_…]  2 sessions", with "on desktop" after the path when `hosts` (the
 * names of several hosts by id) is given. */
function workspaceLine(workspace: Workspace, hosts?: ReadonlyMap<string, string>): string {
  const count = workspace.sessionIds.length
  const on = hosts && workspace.host !== null ? `  on ${printable(hosts.get(workspace.host) ?? workspace.host)}` : ''
  return `${printable(workspace.title)}  ${printable(workspace.path)}${on}  [${workspace.id}]  ${count} session${count === 1 ? '' : 's'}`
}

/** Host names by id when there are several (one host: nothing to tell). */
async function severalHosts(client: ReturnType<typeof remoteClient>): Promise<Map<string, string> | undefined> {
  // A token without workspaces:read still registers: its line just names no host.
  const hosts = await client.hosts().catch(() => [])
  return hosts.length > 1 ? new Map(hosts.map((h) => [h.id, h.name])) : undefined
}

export async function workspaceCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, ...JSON_OPTION, title: { type: 'string' }, host: { type: 'string' } },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const [action, ...rest] = positionals
  if (values.title !== undefined && action !== 'add')
    throw new UsageError('termkeep: --title goes with `workspace add` (`workspace rename <id> <title>` renames)')
  if (values.host !== undefined && action !== 'add') throw new UsageError('termkeep: --host goes with `workspace add`')
  switch (action) {
    case 'add': {
      const [dir] = exactArgs(rest, ['dir'], 'workspace add')
      const path = resolve(dir)
      const client = remoteClient(values)
      const result = await client.createWorkspace(path, values.title, values.host)
      if (values.json) printJson(out, result)
      else {
        const line = workspaceLine(result.workspace, await severalHosts(client))
        out.write(`${result.created ? 'registered' : 'already registered'}: ${line}\n`)
      }
      return 0
    }
    case 'ls': {
      exactArgs(rest, [], 'workspace ls')
      const client = remoteClient(values)
      const registry = await client.registry()
      if (values.json) printJson(out, registry)
      else if (registry.workspaces.length === 0) out.write(`no workspaces (\`${self()} workspace add DIR\` registers one)\n`)
      else {
        const hosts = await severalHosts(client)
        for (const workspace of registry.workspaces) out.write(`${workspaceLine(workspace, hosts)}\n`)
      }
      return 0
    }
    case 'rename': {
      const [id, title] = exactArgs(rest, ['id', 'title'], 'workspace rename')
      const workspace = await remoteClient(values).renameWorkspace(id, title)
      if (values.json) printJson(out, { workspace })
      else out.write(`renamed: ${workspaceLine(workspace)}\n`)
      return 0
    }
    case 'rm': {
      const [id] = exactArgs(rest, ['id'], 'workspace rm')
      await remoteClient(values).removeWorkspace(id)
      if (values.json) printJson(out, { deleted: true })
      else out.write(`unregistered workspace ${id} (nothing on disk changed; its sessions stay recorded)\n`)
      return 0
    }
    default:
      throw new UsageError(
        `termkeep: workspace takes add, ls, rename or rm${action ? ` (not "${action}")` : ''} (\`${self()} workspace --help\` shows the usage)`,
      )
  }
}
