/**
 * Whether a prompt can reach its agent as the script wrote it, the way its profile passes it
 * (docs/workflows.md §1). The script is untrusted: a prompt must arrive as a prompt, whole.
 */
import { MAX_AGENT_STDIN_LINE_BYTES } from '../../schema/limits.ts'
import type { AgentProfile } from '../../schema/wire/workflows.ts'
import type { HookError } from './protocol.ts'

const fatal = (code: string, message: string): HookError => ({ code, message, fatal: true })
const bytes = (text: string) => Buffer.byteLength(text)

/** Pure: why `prompt` cannot go to profile `name` as it is, or undefined. */
export function promptProblem(name: string, profile: AgentProfile, prompt: string): HookError | undefined {
  if (profile.prompt === 'stdin') {
    // Typed into a terminal: control characters would act (Ctrl-C interrupts), and the line
    // discipline keeps only so much of one line.
    if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(prompt)) {
      return fatal(
        'INVALID_ARGUMENT',
        `profile "${name}" takes its prompt on stdin, which cannot carry control characters (other than newline and tab)`,
      )
    }
    if (prompt.split('\n').some((line) => bytes(line) > MAX_AGENT_STDIN_LINE_BYTES)) {
      return fatal('PROMPT_CAP', `profile "${name}" takes its prompt on stdin: each line is at most ${MAX_AGENT_STDIN_LINE_BYTES} bytes`)
    }
    return undefined
  }
  // An argument or an environment entry is a C string: the agent would get the text before the NUL.
  if (prompt.includes('\0'))
    return fatal(
      'INVALID_ARGUMENT',
      `profile "${name}" takes its prompt as ${profile.prompt === 'env' ? 'an environment variable' : 'an argument'}, which cannot carry a NUL character`,
    )
  // The agent's command line would read it as an option (`--dangerously-…`), not as the prompt;
  // after `--` it cannot.
  if (profile.prompt === 'argument' && prompt.startsWith('-') && profile.command.at(-1) !== '--') {
    return fatal(
      'INVALID_ARGUMENT',
      `profile "${name}" takes its prompt as its last argument, where one starting with "-" would be read as an option; start the prompt with other text (or end the profile's command with "--")`,
    )
  }
  return undefined
}
