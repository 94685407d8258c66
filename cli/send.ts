/**
 * `termkeep send <session> <terminal> [TEXT...] [--key NAME ...]`: types into a terminal, as
 * `tmux send-keys` does. TEXT is sent as it is (consecutive TEXT arguments joined by one space);
 * each --key is a tmux key name (`Enter`, `C-c`, `M-x`, `Up`, `F5`, …: schema/keys.ts), in the
 * order given on the command line.
 *
 * Only the controlling follow attachment may type, so `send` takes control for that moment: it
 * follows the terminal, waits until it is the controller, sends, and leaves (control is free then;
 * a `termkeep attach` takes it back by itself). The follow's snapshot also tells the terminal's
 * application cursor mode (DECCKM), so arrows and Home/End are sent in the form the program asked
 * for (`ESC O A` in vim or less, `ESC [ A` at a shell prompt).
 *
 * The bytes go through the attach input queue (web/client/input.ts): each batch under its own
 * Idempotency-Key, retried while its outcome is unknown (a network blip, a stalled server), so
 * nothing is typed twice; when the outcome stays unknown, send says so and exits 1.
 */
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { keyBytes, KEY_NAMES, type KeyModes } from '../schema/keys.ts'
import { UNKNOWN_OUTCOME_RETRY_MS } from '../schema/limits.ts'
import type { TerminalInfo } from '../schema/wire/terminals.ts'
import { follow, type FollowEnd } from '../web/client/follow.ts'
import { InputQueue, type InputFailure } from '../web/client/input.ts'
import { resolveTarget, TARGET_USAGE, targetOf, targetWords } from './target.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, remoteErrorLine, type CliClient } from './remote.ts'
import { CommandError, HELP_OPTION, printedHelp, UsageError } from './usage.ts'

const USAGE = `usage: termkeep send <session> <terminal> [TEXT ...] [--key NAME ...]

  Types into a terminal: TEXT as it is (several TEXT arguments are joined by one space), each
  --key NAME as that key, all in command-line order. Key names are tmux's: Enter, Tab, Space,
  Escape, BSpace, Up, Down, Left, Right, Home, End, PageUp, PageDown, Insert, Delete, F1–F12, and
  any of them or a single character with C- (Ctrl), M- (Alt/Meta) or S- (Shift): C-c, M-x, S-Tab.
  Use -- before TEXT that starts with a dash.

  Takes control for that moment: only the controlling attachment may type, so send attaches,
  becomes the controller, sends and leaves. Another client attached meanwhile turns read-only
  until then (termkeep attach takes control back by itself; the page offers "Take control").

  --key NAME                a key to send (repeatable), e.g. --key Enter, --key C-c
${TARGET_USAGE}
${REMOTE_USAGE}`

/** What to type, in order: literal text, or a key by name. */
export type Piece = { text: string } | { key: string }

/** Pure: the pieces of a `send` command line after its target (`targetWords` positionals), in their order. */
export function piecesOf(
  tokens: readonly ({ kind: 'positional'; value: string } | { kind: 'option'; name: string; value?: string } | { kind: string })[],
  targetWords = 2,
): Piece[] {
  const pieces: Piece[] = []
  let positionals = 0
  for (const token of tokens) {
    if (token.kind === 'positional' && 'value' in token) {
      if (positionals++ < targetWords) continue // <session> <terminal>, or session:terminal
      const last = pieces.at(-1)
      if (last && 'text' in last) last.text += ` ${token.value}`
      else pieces.push({ text: token.value })
    } else if (token.kind === 'option' && 'name' in token && token.name === 'key' && token.value !== undefined) {
      pieces.push({ key: token.value })
    }
  }
  return pieces
}

/** Pure: the bytes the pieces stand for under the terminal's modes. */
export function bytesOf(pieces: readonly Piece[], modes: KeyModes): Uint8Array {
  const text = pieces.map((p) => ('text' in p ? p.text : keyBytes(p.key, modes)!)).join('')
  return new TextEncoder().encode(text)
}

/** Pure: the application cursor mode after `text` (DECSET/DECRST 1, alone or among others). */
export function cursorKeysAfter(text: string, current: boolean): boolean {
  let mode = current
  for (const match of text.matchAll(/\x1b\[\?([\d;]*)([hl])/g)) {
    if (match[1].split(';').includes('1')) mode = match[2] === 'h'
  }
  return mode
}

export async function sendCommand(args: string[]): Promise<number> {
  const { values, positionals, tokens } = parseArgs({
    args,
    allowPositionals: true,
    tokens: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, key: { type: 'string', multiple: true, default: [] } },
  })
  if (printedHelp(values, USAGE)) return 0
  const words = targetWords(positionals)
  if (words < 2 && !positionals[0]?.includes(':'))
    throw new UsageError(
      'termkeep: send takes <session> <terminal> (or session:terminal) and then TEXT or --key NAME (`termkeep send --help` shows the usage)',
    )
  const target = targetOf(positionals.slice(0, words), 'send')
  const pieces = piecesOf(tokens, words)
  if (pieces.length === 0) throw new UsageError('termkeep: send has nothing to send: give TEXT or --key NAME')
  for (const piece of pieces) {
    if ('key' in piece && keyBytes(piece.key) === undefined) {
      throw new UsageError(
        `termkeep: "${piece.key}" is not a key name; names are ${KEY_NAMES.join(', ')}, a single character, and C-, M-, S- forms of them`,
      )
    }
  }
  const client = remoteClient(values)
  const { sessionId, terminalId } = await resolveTarget(client, target)
  const info = await client.terminal(sessionId, terminalId)
  if (info.state !== 'starting' && info.state !== 'running')
    throw new CommandError(`termkeep: terminal ${sessionId}/${terminalId} is ${info.state}; nothing was sent`)
  await withControl(client, sessionId, terminalId, async (attachment, modes) => {
    const bytes = bytesOf(pieces, modes)
    let failure: InputFailure | undefined
    const queue = new InputQueue(
      (batch, key) => client.input(sessionId, terminalId, attachment, batch, key),
      (failed) => (failure = failed),
    )
    queue.push(bytes)
    await queue.drained()
    if (failure) throw sendFailed(failure, bytes.length)
  })
  return 0
}

/** The error a failed send ends with: what was refused, or that the outcome is unknown. */
function sendFailed({ error, bytes, uncertain }: InputFailure, total: number): unknown {
  if (!uncertain) {
    if (bytes === total || !(error instanceof Error)) return error
    return new CommandError(`${remoteErrorLine(error)}\ntermkeep: the first ${total - bytes} of ${total} bytes were typed, the rest not`)
  }
  const why = remoteErrorLine(error)
  return new CommandError(
    `${why}\ntermkeep: ${bytes} of ${total} bytes may or may not have been typed: their outcome was still unknown after ${UNKNOWN_OUTCOME_RETRY_MS / 1000} s of retrying`,
  )
}

/**
 * Runs `act` while a follow of this process controls the terminal, then leaves. `modes` are the
 * terminal's input modes as of the snapshot and any output after it.
 */
async function withControl(
  client: CliClient,
  sessionId: string,
  terminalId: string,
  act: (attachment: string, modes: KeyModes) => Promise<void>,
): Promise<void> {
  const attachment = `cli-send-${randomBytes(6).toString('hex')}`
  const abort = new AbortController()
  const modes: KeyModes = { applicationCursorKeys: false }
  let confirm: () => void = () => {}
  const controlled = new Promise<void>((resolve) => (confirm = resolve))
  const check = (info: TerminalInfo) => info.controllerId === attachment && confirm()
  const following = follow({
    client,
    sessionId,
    terminalId,
    attachment,
    signal: abort.signal,
    handlers: {
      snapshot: (_sequence, screen, info) => {
        modes.applicationCursorKeys = cursorKeysAfter(screen, false)
        check(info)
      },
      output: (_sequence, bytes) =>
        void (modes.applicationCursorKeys = cursorKeysAfter(Buffer.from(bytes).toString('latin1'), modes.applicationCursorKeys === true)),
      state: check,
    },
  })
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(
      () =>
        reject(
          new CommandError(
            `termkeep: did not get control of ${sessionId}/${terminalId} within ${client.timeoutMs / 1000} s; nothing was sent`,
          ),
        ),
      client.timeoutMs,
    ).unref(),
  )
  try {
    await Promise.race([controlled, following.then((end) => Promise.reject(endedBeforeControl(end, sessionId, terminalId))), timeout])
    await act(attachment, modes)
  } finally {
    abort.abort()
    await following
  }
}

function endedBeforeControl(end: FollowEnd, sessionId: string, terminalId: string): unknown {
  if (end.kind === 'refused') return end.error
  return new CommandError(`termkeep: terminal ${sessionId}/${terminalId} ended before send got control; nothing was sent`)
}
