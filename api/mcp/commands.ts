/**
 * The command tools (routes: api/commands/routes.ts, docs/commands.md): `run_in_terminal` types a
 * command at an existing shell's prompt and answers when it ended (its directory, variables and
 * history carry over to the next call, as in a person's shell); `list_commands` and
 * `command_output` read what any shell of the session ran, from the durable records.
 */
import * as v from 'valibot'
import type { CommandOutput, CommandPage, CommandRun } from '../../schema/wire/commands.ts'
import { CommandsQuery, RunCommand } from '../../schema/wire/commands.ts'
import { boundedInteger } from '../../schema/wire/common.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import { toolInput } from './input.ts'
import { jsonResult, routeTool, T, textResult, type Tool } from './tool.ts'

const C = `${T}/commands`
const READ = { readOnlyHint: true, openWorldHint: false }

export const runInTerminal = routeTool({
  name: 'run_in_terminal',
  title: 'Run a command in a terminal',
  description:
    "Type `command` at the prompt of the terminal's shell (bash, zsh or fish with termkeep's integration) and answer when it ended: its exit code, " +
    'its output as text, the directory after it. State carries over between calls (cd, export, a virtualenv), as in your own shell. ' +
    'Refused (command/not-at-prompt) while a command runs or a line is half typed, and (terminal/control-unavailable) while a person controls the terminal. ' +
    'After `timeoutMs` the answer says `ended: false` and the command goes on (list_commands, command_output, send_keys C-c).',
  annotations: { destructiveHint: true, openWorldHint: true },
  method: 'POST',
  path: C,
  params: TerminalParams,
  body: RunCommand,
  present: (value) => {
    const { text, command, ...facts } = value as CommandRun
    return textResult(text, { n: command?.n ?? null, command: command?.command ?? null, ...facts })
  },
})

export const listCommands = routeTool({
  name: 'list_commands',
  title: 'List commands',
  description:
    "The commands a terminal's shell ran (by anyone), oldest first, each with its command line, directory, exit code, times and output cursors; " +
    'the newest `limit` by default, `before` / `after` a command number to page.',
  annotations: READ,
  method: 'GET',
  path: C,
  params: TerminalParams,
  query: CommandsQuery,
  present: (value) => jsonResult(value as CommandPage),
})

const OutputArgs = v.object({ n: v.pipe(boundedInteger('n', 1, Number.MAX_SAFE_INTEGER), v.description('The command number')) })

export const commandOutput: Tool = {
  name: 'command_output',
  title: "A command's output",
  description: "One command's output as plain text (its last 64 KiB), kept after the terminal ended; a running command's output so far.",
  annotations: READ,
  uses: [{ method: 'GET', path: `${C}/:n/output` }],
  input: toolInput({ params: TerminalParams, own: OutputArgs }),
  async run({ params, own }, { call }) {
    const { n } = own as v.InferOutput<typeof OutputArgs>
    const { text, ...facts } = await call.json<CommandOutput>('GET', `${C}/:n/output`, { params: { ...params, n: String(n) } })
    return textResult(text, facts)
  },
}

export const COMMAND_TOOLS: readonly Tool[] = [runInTerminal, listCommands, commandOutput]
