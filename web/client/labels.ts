/**
 * What people recognise sessions and terminals by, for the page and the CLI alike (pure): a
 * terminal by the program in its foreground (as VS Code names its tabs and tmux shows
 * pane_current_command) unless someone named it; a session by its name, else its directory and
 * what runs in it; each with a marker of whether anything in it still runs; and how a terminal
 * ended, in words ("closed", "exited with code 2", "ended by SIGKILL"), never a bare signal number.
 */
import type { Session } from '../../schema/wire/registry.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'

/**
 * A session record as labels read it. `name` is the session's own name once the registry records
 * one: the one field to fill for every label here to use it.
 */
export type LabelledSession = Session & { name?: string | null }

export function isLive(info: Pick<TerminalInfo, 'state'>): boolean {
  return info.state === 'starting' || info.state === 'running'
}

/** Whether the title is one a person gave (a rename or `--title`), not the shell's name it starts with. */
export function named(info: Pick<TerminalInfo, 'title' | 'shell'>): boolean {
  return info.title !== '' && info.title !== info.shell.name
}

/** A terminal's name: the name a person gave it, else the program in its foreground while it runs. */
export function terminalName(info: Pick<TerminalInfo, 'title' | 'shell' | 'state' | 'foregroundCommand' | 'id'>): string {
  if (named(info)) return info.title
  if (isLive(info) && info.foregroundCommand) return info.foregroundCommand
  return info.title || info.shell.name || info.id
}

/** Live: something runs in it. Unreachable: something runs in it on a host that is down (it is
 * not retired: it comes back with its host). Ended: it has terminals and none runs. Retired: its
 * terminals ended with their sidecar or were closed (their last screens are kept). Empty: no
 * terminals yet. */
export type SessionMarker = 'live' | 'unreachable' | 'ended' | 'retired' | 'empty'

export function sessionMarker(terminals: readonly Pick<TerminalInfo, 'state' | 'unreachable'>[], hostDown = false): SessionMarker {
  if (terminals.length === 0) return 'empty'
  if (terminals.some(isLive)) return hostDown || terminals.some((t) => isLive(t) && t.unreachable) ? 'unreachable' : 'live'
  return terminals.every((t) => t.state === 'retired') ? 'retired' : 'ended'
}

/** The last segment of a path ("/" for the root). */
export function lastSegment(path: string): string {
  return path.replace(/\/+$/, '').split('/').at(-1) || '/'
}

/** What runs in a session: its live terminals' programs, each once, in terminal order. */
export function programsOf(terminals: readonly TerminalInfo[], limit = 3): string {
  const names = [...new Set(terminals.filter(isLive).map(terminalName))]
  if (names.length <= limit) return names.join(', ')
  return `${names.slice(0, limit).join(', ')} +${names.length - limit}`
}

export interface SessionLabel {
  /** The session's name, else its directory's last segment. */
  name: string
  /** What runs in it (live terminals' programs); '' when nothing runs. */
  running: string
  marker: SessionMarker
  /** The full directory and when it started, for a tooltip. */
  detail: string
}

/** How a session is shown: `terminals` undefined while they are not known (yet, or not allowed). */
export function sessionLabel(session: LabelledSession, terminals: readonly TerminalInfo[] | undefined, hostDown = false): SessionLabel {
  const started = new Date(session.createdAt).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
  return {
    name: session.name || session.title || lastSegment(session.cwd),
    running: terminals ? programsOf(terminals) : '',
    marker: terminals ? sessionMarker(terminals, hostDown) : 'empty',
    detail: `${session.cwd} · started ${started} · ${session.id}`,
  }
}

/** Common signals by number (Linux), for messages. */
const SIGNALS: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  6: 'SIGABRT',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  13: 'SIGPIPE',
  15: 'SIGTERM',
}

export function signalName(signal: number): string {
  return SIGNALS[signal] ?? `signal ${signal}`
}

/**
 * How a terminal that no longer runs ended, as a sentence's predicate: "was closed", "exited with
 * code 2", "was ended by SIGKILL", "ended when its sidecar stopped". `closedHere` says the close
 * came from this very client (the only closer a client can know of).
 */
export function endedText(
  info: Pick<TerminalInfo, 'state' | 'exitCode' | 'exitSignal' | 'closedAt' | 'error'>,
  closedHere = false,
): string {
  if (info.closedAt !== null && info.closedAt !== undefined) {
    const exited = info.exitCode !== null && info.state !== 'running' ? ` (its shell had exited with code ${info.exitCode})` : ''
    return closedHere ? `was closed from this window${exited}` : `was closed${exited}`
  }
  if (info.error) return `failed: ${info.error}`
  if (info.exitCode !== null) return `exited with code ${info.exitCode}`
  if (info.exitSignal !== null && info.exitSignal !== 0) return `was ended by ${signalName(info.exitSignal)}`
  if (info.state === 'retired') return 'ended when its terminal host stopped or restarted'
  return info.state === 'closed' ? 'was closed' : 'exited'
}

/** How a terminal ended in a word or two, for a tab or a listing: "closed", "exit 2", "SIGKILL",
 * "retired", "failed". */
export function endedWord(info: Pick<TerminalInfo, 'state' | 'exitCode' | 'exitSignal' | 'closedAt' | 'error'>): string {
  if (info.closedAt !== null && info.closedAt !== undefined) return 'closed'
  if (info.error) return 'failed'
  if (info.exitCode !== null) return `exit ${info.exitCode}`
  if (info.exitSignal !== null && info.exitSignal !== 0) return signalName(info.exitSignal)
  return info.state
}
