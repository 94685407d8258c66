/**
 * `termkeep ps <session> <terminal>`: the terminal's foreground program and its process tree,
 * like `ps f` for one terminal (through the observation routes: the token needs
 * `observe:process`). `--json` prints `{foreground, processes}` as the API gives them.
 */
import { parseArgs } from 'node:util'
import { printable } from '../schema/wire/common.ts'
import type { Descendants, ObservationContext, ProcessSnapshot } from '../schema/wire/observation.ts'
import { terminalPath } from '../web/client/api.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { HELP_OPTION, JSON_OPTION, printedHelp, printJson } from './usage.ts'

const USAGE = `usage: termkeep ps <session> <terminal> [--json]

  The terminal's foreground program and every process of its tree, children indented under
  their parents (STAT is the kernel's state, + for the foreground process group).
  Needs a token with observe:process.

  --json                    print {foreground, processes} as JSON
${TARGET_USAGE}
${REMOTE_USAGE}`

export async function psCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, ...JSON_OPTION },
  })
  if (printedHelp(values, USAGE, out)) return 0
  const target = targetOf(positionals, 'ps')
  const client = remoteClient(values)
  const { sessionId, terminalId } = await resolveTarget(client, target)
  const base = terminalPath(sessionId, terminalId)
  const context = await client.json<ObservationContext>('GET', `${base}/observation`)
  const tree = await client.json<Descendants>('POST', `${base}/observation/processes/descendants`, { json: {} })
  if (values.json) {
    printJson(out, { foreground: context.foreground, processes: tree.processes })
    return 0
  }
  const leader = tree.processes.find((p) => p.handle.id === context.process.id)
  out.write(`foreground: ${printable(context.foreground.executableName)}${leader ? ` (pid ${leader.pid})` : ''}\n`)
  out.write(`${psLines(tree.processes).join('\n')}\n`)
  if (tree.truncated) out.write(`(only the first ${tree.processes.length} processes are shown)\n`)
  return 0
}

/** Pure: `ps f`-style lines, a header first; a child sits under its parent, indented by depth. */
export function psLines(processes: readonly ProcessSnapshot[]): string[] {
  const depth = new Map<number, number>()
  for (const p of processes) depth.set(p.pid, depth.has(p.parentPid) ? depth.get(p.parentPid)! + 1 : 0)
  const lines = ['    PID STAT START    COMMAND']
  for (const p of processes) {
    const level = depth.get(p.pid) ?? 0
    const tree = level === 0 ? '' : `${'    '.repeat(level - 1)} \\_ `
    const command = printable([p.executableName, ...(p.arguments ?? [])].join(' '))
    const stat = `${p.state}${p.foreground ? '+' : ''}`.padEnd(4)
    lines.push(`${String(p.pid).padStart(7)} ${stat} ${startOf(p.startedAt)} ${tree}${command}`)
  }
  return lines
}

function startOf(startedAt: string | undefined): string {
  if (!startedAt) return '-'.padEnd(8)
  const at = new Date(startedAt)
  return [at.getHours(), at.getMinutes(), at.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':')
}
