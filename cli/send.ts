/**
 * `termkeep send <session> <terminal> [TEXT ...] [--key NAME ...] [-- TEXT ...]`: types into a
 * terminal, as `tmux send-keys` does. TEXT is sent as it is (consecutive TEXT words joined by one
 * space); each --key is a tmux key name (`Enter`, `C-c`, `M-x`, `Up`, `F5`, …: schema/keys.ts), in
 * the order given on the command line. Any word that is not one of send's own options is text, so
 * `send S T git commit -m wip --key Enter` types `git commit -m wip` and presses Enter; after `--`
 * every word is text, `--key` and `--help` included.
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
import { keyBytes, KEY_NAMES, type KeyModes } from '../schema/keys.ts'
import { UNKNOWN_OUTCOME_RETRY_MS } from '../schema/limits.ts'
import type { TerminalInfo } from '../schema/wire/terminals.ts'
import { follow, type FollowEnd } from '../web/client/follow.ts'
import { InputQueue, type InputFailure } from '../web/client/input.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, remoteErrorLine, type CliClient } from './remote.ts'
import { CommandError, printedHelp, UsageError } from './usage.ts'
import { self } from './self.ts'

const USAGE = `usage: termkeep send <session> <terminal> [TEXT ...] [--key NAME ...] [-- TEXT ...]

  Types into a terminal: TEXT as it is (several TEXT words are joined by one space), each
  --key NAME as that key, all in command-line order. Every word that is not one of the options
  below is text, dashes and all: send S T git commit -m wip --key Enter. After -- every word is
  text, even --key or --help. Key names are tmux's: Enter, Tab, Space, Escape, BSpace, Up, Down,
  Left, Right, Home, End, PageUp, PageDown, Insert, Delete, F1–F12, and any of them or a single
  character with C- (Ctrl), M- (Alt/Meta) or S- (Shift): C-c, M-x, S-Tab.

  Takes control for that moment: only the controlling attachment may type, so send attaches,
  becomes the controller, sends and leaves. Another client attached meanwhile turns read-only
  until then (termkeep attach takes control back by itself; the page offers "Take control").

  --key NAME                a key to send (repeatable), e.g. --key Enter, --key C-c
${TARGET_USAGE}
${REMOTE_USAGE}`

/** What to type, in order: literal text, or a key by name. */
export type Piece = { text: string } | { key: string }

/** send's options that take a value (the remote ones and --key); --help/-h takes none. */
const VALUE_OPTIONS = new Set(['key', ...Object.keys(REMOTE_OPTIONS)])

export interface SendLine {
  help: boolean
  remote: { url?: string; token?: string; 'request-timeout'?: string }
  /** <session> <terminal>, and anything else: the words that are not options, in order. */
  positionals: string[]
  pieces: Piece[]
}

/**
 * Pure: a `send` command line after the word `send`. The first two words that are not options are
 * <session> and <terminal>; after them every word that is not one of send's options is text (a
 * text word that is one, or starts like one, goes after `--`).
 */
export function parseSend(args: readonly string[]): SendLine {
  const line: SendLine = { help: false, remote: {}, positionals: [], pieces: [] }
  const text = (word: string) => {
    // The target: <session> <terminal>, or one session:terminal (cli/target.ts).
    if (line.positionals.length < (line.positionals[0]?.includes(':') ? 1 : 2)) return void line.positionals.push(word)
    const last = line.pieces.at(-1)
    if (last && 'text' in last) last.text += ` ${word}`
    else line.pieces.push({ text: word })
  }
  for (let i = 0; i < args.length; i++) {
    const word = args[i]
    if (word === '--') {
      for (const rest of args.slice(i + 1)) text(rest)
      break
    }
    if (word === '--help' || word === '-h') {
      line.help = true
      continue
    }
    const option = /^--([\w-]+)(?:=(.*))?$/.exec(word)
    if (!option || !VALUE_OPTIONS.has(option[1])) {
      text(word)
      continue
    }
    const value = option[2] ?? args[++i]
    if (value === undefined) throw new UsageError(`termkeep: send's --${option[1]} needs a value`)
    if (option[1] === 'key') line.pieces.push({ key: value })
    else line.remote[option[1] as keyof SendLine['remote']] = value
  }
  return line
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
  const { help, remote, positionals, pieces } = parseSend(args)
  if (printedHelp({ help }, USAGE)) return 0
  if (positionals.length < 2 && !positionals[0]?.includes(':'))
    throw new UsageError(
      `termkeep: send takes <session> <terminal> (or session:terminal) and then TEXT or --key NAME (\`${self()} send --help\` shows the usage)`,
    )
  const target = targetOf(positionals, 'send')
  if (pieces.length === 0) throw new UsageError('termkeep: send has nothing to send: give TEXT or --key NAME')
  for (const piece of pieces) {
    if ('key' in piece && keyBytes(piece.key) === undefined) {
      throw new UsageError(
        `termkeep: "${piece.key}" is not a key name; names are ${KEY_NAMES.join(', ')}, a single character, and C-, M-, S- forms of them`,
      )
    }
  }
  const client = remoteClient(remote)
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
