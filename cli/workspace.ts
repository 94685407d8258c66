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

const USAGE = `usage: termkeep workspace add <dir> [--title TITLE]
       termkeep workspace ls [--json]
       termkeep workspace rename <id> <title>
       termkeep workspace rm <id>

  add      registers a directory (on the server's machine) as a workspace; sessions whose
           directory it is join it. A directory already registered answers its workspace.
  ls       workspaces in the user's order, with their ids and session counts
  rename   gives a workspace another (unique) title
  rm       unregisters a workspace: nothing on disk changes and its sessions stay recorded

  --title TITLE             the title (default: the directory's name)
  --json                    print the server's answer as JSON, for scripts
${REMOTE_USAGE}`

/** "src  /home/me/src  [ws_…]  2 sessions" */
function workspaceLine(workspace: Workspace): string {
  const count = workspace.sessionIds.length
  return `${printable(workspace.title)}  ${printable(workspace.path)}  [${workspace.id}]  ${count} session${count === 1 ? '' : 's'}`
}

export async function workspaceCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, ...JSON_OPTION, title: { type: 'string' } },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const [action, ...rest] = positionals
  if (values.title !== undefined && action !== 'add')
    throw new UsageError('termkeep: --title goes with `workspace add` (`workspace rename <id> <title>` renames)')
  switch (action) {
    case 'add': {
      const [dir] = exactArgs(rest, ['dir'], 'workspace add')
      const path = resolve(dir)
      const result = await remoteClient(values).createWorkspace(path, values.title)
      if (values.json) printJson(out, result)
      else out.write(`${result.created ? 'registered' : 'already registered'}: ${workspaceLine(result.workspace)}\n`)
      return 0
    }
    case 'ls': {
      exactArgs(rest, [], 'workspace ls')
      const registry = await remoteClient(values).registry()
      if (values.json) printJson(out, registry)
      else if (registry.workspaces.length === 0) out.write(`no workspaces (\`${self()} workspace add DIR\` registers one)\n`)
      else for (const workspace of registry.workspaces) out.write(`${workspaceLine(workspace)}\n`)
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
