/**
 * One observation request's view of one live terminal: its binding (what every handle it mints or
 * accepts is tied to), its process tree read once from /proc, the foreground process, and the
 * environment of that tree — looked up in the foreground process first, then the rest of the
 * tree, never in the sidecar's own environment.
 */
import { TermkeepError } from '../../schema/errors.ts'
import { OBSERVE_MAX_ENV_VALUE_BYTES } from '../../schema/limits.ts'
import type { LiveTerminal } from '../terminals/terminal.ts'
import type { Binding, HandleCodec, ProcessIdentity } from './handles.ts'
import type { ProcStat } from './proc.ts'
import { procReader } from './proc-reader.ts'

/** The terminal's process tree as read once, for one request. */
export class ProcessTree {
  /** Shell first, then descendants depth first, then session strays (proc.ts). */
  readonly processes: readonly ProcStat[]
  /** The leader of the PTY's foreground process group (the shell at its prompt). */
  readonly foreground: ProcStat
  readonly #members: ReadonlyMap<number, ProcStat>

  constructor(processes: ProcStat[], foreground: ProcStat) {
    this.processes = processes
    this.#members = new Map(processes.map((p) => [p.pid, p]))
    this.foreground = this.#members.has(foreground.pid) ? foreground : processes[0]
  }

  /** Is this process (by identity) one of the terminal's now? */
  member(identity: ProcessIdentity): ProcStat | undefined {
    const process = this.#members.get(identity.pid)
    return process && process.startTicks === identity.startTicks ? process : undefined
  }

  /** In the PTY's foreground process group. */
  inForeground(process: ProcStat): boolean {
    return process.pgrp === this.foreground.pgrp
  }

  /** Where a variable is looked up: the foreground process, its group, then the rest. */
  lookupOrder(): ProcStat[] {
    const group = this.processes.filter((p) => p.pgrp === this.foreground.pgrp && p.pid !== this.foreground.pid)
    const rest = this.processes.filter((p) => p.pgrp !== this.foreground.pgrp)
    return [this.foreground, ...group, ...rest]
  }
}

export class ObservedTerminal {
  readonly binding: Binding
  readonly terminal: LiveTerminal
  readonly shellPid: number
  /** The names the caller's token declared (the API sends them; see OBSERVE_ENV_HEADER). */
  readonly declared: ReadonlySet<string>
  readonly codec: HandleCodec
  #tree: Promise<ProcessTree> | undefined
  readonly #environs = new Map<number, Promise<Record<string, string> | undefined>>()

  private constructor(terminal: LiveTerminal, shellPid: number, declared: ReadonlySet<string>, codec: HandleCodec) {
    this.terminal = terminal
    this.shellPid = shellPid
    this.declared = declared
    this.codec = codec
    this.binding = bindingOf(terminal)
  }

  /** The view of a live terminal whose program still runs, else 409 `observe/not-running`. The
   * process tree is read when an operation first needs it (a file read does not). */
  static of(terminal: LiveTerminal, declared: ReadonlySet<string>, codec: HandleCodec): ObservedTerminal {
    const pid = terminal.processId
    if (terminal.state !== 'running' || pid === undefined) throw notRunning(terminal.id)
    return new ObservedTerminal(terminal, pid, declared, codec)
  }

  tree(): Promise<ProcessTree> {
    this.#tree ??= procReader.tree(this.shellPid).then(({ tree, foreground }) => {
      if (tree.length === 0 || !foreground) throw notRunning(this.terminal.id)
      return new ProcessTree(tree, foreground)
    })
    return this.#tree
  }

  /** The value of `name` in the foreground process's environment, else the first process of the
   * tree (foreground group first) that has it. Values longer than a fact are left out. */
  async variable(name: string): Promise<string | undefined> {
    for (const process of (await this.tree()).lookupOrder()) {
      const environ = await this.#environ(process.pid)
      if (environ && Object.hasOwn(environ, name)) {
        const value = environ[name]
        return Buffer.byteLength(value) <= OBSERVE_MAX_ENV_VALUE_BYTES ? value : undefined
      }
    }
    return undefined
  }

  /** 403 `observe/undeclared` unless every name was declared on the caller's token. */
  requireDeclared(names: readonly string[]): void {
    const missing = names.filter((name) => !this.declared.has(name))
    if (missing.length > 0) {
      throw new TermkeepError('observe/undeclared', `not declared on this token (observeEnvironment): ${missing.join(', ')}`, {
        names: missing,
      })
    }
  }

  #environ(pid: number): Promise<Record<string, string> | undefined> {
    let environ = this.#environs.get(pid)
    if (!environ) this.#environs.set(pid, (environ = procReader.environ(pid)))
    return environ
  }
}

/** What every handle of this terminal's current incarnation is bound to. */
export function bindingOf(terminal: Pick<LiveTerminal, 'sessionId' | 'id' | 'hostGeneration' | 'createdAt'>): Binding {
  return { sessionId: terminal.sessionId, terminalId: terminal.id, incarnation: `${terminal.hostGeneration}.${terminal.createdAt}` }
}

export function handleInvalid(what = 'handle'): TermkeepError {
  return new TermkeepError(
    'observe/handle-invalid',
    `this ${what} is not valid for this terminal (unknown, from elsewhere, or its object is gone)`,
  )
}

function notRunning(id: string): TermkeepError {
  return new TermkeepError('observe/not-running', `the program of terminal ${id} has exited: there is nothing to observe`, {
    terminalId: id,
  })
}
