/**
 * Running a command in a terminal's existing shell (POST …/commands): typed at the shell's prompt
 * like a person would, then waited for through the command marks. Refused unless the shell waits
 * at an empty prompt with termkeep's marks (a command running, a half-typed line, another run, a
 * shell without marks: 409 `command/not-at-prompt`), and — as any input — unless the caller may
 * type (a person's attachment holding control refuses it: 409 `terminal/control-unavailable`).
 */
import { TermkeepError } from '../../schema/errors.ts'
import { type CommandRun, RUN_ATTACHMENT_ID, type RunCommand } from '../../schema/wire/commands.ts'
import type { Sender } from '../../schema/wire/terminals.ts'
import type { LiveTerminal } from '../terminals/terminal.ts'
import type { CommandTracker } from './tracker.ts'

/** After its end mark, how long a run waits for the prompt to be back (its directory comes with it)
 * before it answers without: a slow prompt (a git status in it) must not hold the answer long. */
const PROMPT_WAIT_MS = 2_000

const BRACKETED_PASTE = ['\x1b[200~', '\x1b[201~'] as const

function notAtPrompt(reason: string, message: string, details: Record<string, unknown> = {}): TermkeepError {
  return new TermkeepError('command/not-at-prompt', message, { reason, ...details })
}

/** Throws unless the shell waits at an empty prompt (and no other run is on its way). */
export function requireAtPrompt(tracker: CommandTracker | undefined): CommandTracker {
  if (!tracker) throw notAtPrompt('no-marks', 'this terminal has no shell integration (docs/commands.md): commands cannot be run in it')
  if (tracker.reserved) throw notAtPrompt('busy', 'another command is being run in this terminal')
  if (tracker.phase === 'running') throw notAtPrompt('running', `command ${tracker.newest} is still running`, { n: tracker.newest })
  if (tracker.phase !== 'input')
    throw notAtPrompt(
      'no-prompt',
      tracker.phase === 'unknown'
        ? "the shell has not shown a prompt with command marks yet (its startup files may still be running: the terminal's screen shows where it is)"
        : 'the shell is not at its prompt',
    )
  if (tracker.inputSincePrompt) throw notAtPrompt('input-pending', 'something was typed at the prompt since it was shown')
  return tracker
}

/** The bytes that type `command` and Enter: pasted when the shell asked for bracketed paste (a tab
 * in it stays a tab instead of completing). */
export function typedBytes(command: string, bracketedPaste: boolean): Uint8Array {
  const text = bracketedPaste ? `${BRACKETED_PASTE[0]}${command}${BRACKETED_PASTE[1]}\r` : `${command}\r`
  return new TextEncoder().encode(text)
}

/**
 * A shell just started (no prompt yet) or drawing its prompt is waited for, within the run's own
 * timeout and at most this long: a terminal created a moment ago is not refused for being young,
 * while rc files that take longer than this are reported (409 no-prompt) rather than waited out.
 */
const PROMPT_START_WAIT_MS = 10_000

async function untilPrompt(tracker: CommandTracker | undefined, deadline: number, signal: AbortSignal): Promise<void> {
  if (!tracker) return
  while (!tracker.finished && !tracker.reserved && (tracker.phase === 'unknown' || tracker.phase === 'prompt')) {
    const left = deadline - Date.now()
    // A terminal without integration may never show a marked prompt: nothing to wait for.
    if (left <= 0 || (tracker.phase === 'unknown' && tracker.marks !== 'injected')) return
    if ((await tracker.changes.wait(left, signal)) !== 'changed') return
  }
}

export async function runInTerminal(terminal: LiveTerminal, request: RunCommand, from: Sender, signal: AbortSignal): Promise<CommandRun> {
  const deadline = Date.now() + request.timeoutMs
  await untilPrompt(terminal.commands, Math.min(deadline, Date.now() + PROMPT_START_WAIT_MS), signal)
  const tracker = requireAtPrompt(terminal.commands)
  tracker.reserved = true
  try {
    const before = { newest: tracker.newest, prompts: tracker.prompts, accepted: tracker.accepted, paste: tracker.bracketedPaste }
    tracker.expect(request.command)
    type(terminal, typedBytes(request.command, tracker.bracketedPaste), from)
    let endedAt: number | undefined
    for (;;) {
      const started = tracker.newest > before.newest ? tracker.record(before.newest + 1) : undefined
      if (started?.state === 'ended') endedAt ??= Date.now()
      // Back at a prompt after the line was accepted (with bracketed paste, its end tells when).
      const back = tracker.prompts > before.prompts && (!before.paste || tracker.accepted > before.accepted)
      const done =
        tracker.finished ||
        (started === undefined && back) ||
        (started?.state === 'ended' && (tracker.phase === 'input' || Date.now() - endedAt! >= PROMPT_WAIT_MS))
      const left = Math.min(deadline, endedAt === undefined ? deadline : endedAt + PROMPT_WAIT_MS) - Date.now()
      if (done || left <= 0) break
      if ((await tracker.changes.wait(left, signal)) === 'aborted') break
    }
    await tracker.flushed()
    return answer(tracker, before.newest + 1, tracker.prompts > before.prompts && (!before.paste || tracker.accepted > before.accepted))
  } finally {
    tracker.reserved = false
  }
}

/** Types as the caller's own controlling attachment, or under control taken for the write alone
 * when nobody (a person) holds it: the same arbitration as `POST …/keys` with `if-free`. */
function type(terminal: LiveTerminal, bytes: Uint8Array, from: Sender): void {
  terminal.writeOnce({ attachment: from.attachment ?? RUN_ATTACHMENT_ID, principal: from.principal }, bytes, 'if-free')
}

/** `back`: the shell showed its prompt again since the command was typed. */
function answer(tracker: CommandTracker, n: number, back: boolean): CommandRun {
  const found = tracker.newest >= n ? tracker.record(n) : undefined
  if (!found) return { command: null, ended: back, exitCode: null, text: '', omittedBytes: 0, cwd: tracker.cwd, durationMs: 0 }
  const record = { ...found }
  const output = tracker.textOf(n) ?? { text: '', omittedBytes: 0 }
  const ended = record.state === 'ended'
  return {
    command: record,
    ended,
    exitCode: record.exitCode,
    text: output.text,
    omittedBytes: output.omittedBytes,
    cwd: ended ? tracker.cwd : null,
    durationMs: (record.endedAt ?? Date.now()) - record.startedAt,
  }
}
