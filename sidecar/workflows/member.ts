/**
 * One member of a run: an accepted `agent()` call, started in a new terminal of the run's session
 * running its profile's command. Its life: the terminal is created (journaled, displayed, listed
 * with `workflow: {run, seq}`, followable like any terminal), `workflow/agent-start` is logged, the
 * member waits for the program to exit (a person may type into it meanwhile), reads its text (the
 * result file, else the rendered output), closes the terminal (its process group is killed, its
 * last screen persisted), and logs `workflow/agent-end` exactly once, also when it is cancelled.
 * While it is open the member holds its terminal, so idle reclamation never takes it.
 */
import { constants } from 'node:fs'
import { open } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { CLOSE_DRAIN_MS, MAX_AGENT_TEXT_BYTES } from '../../schema/limits.ts'
import { DISPLAY_DRAIN_MS } from '../tuning.ts'
import { AGENT_COLS, AGENT_ROWS } from './tuning.ts'
import type { AgentOutcome, AgentProfile, AgentResult } from '../../schema/wire/workflows.ts'
import { untilCaughtUp } from '../emulator/emulator.ts'
import type { TerminalHost } from '../terminals/host.ts'
import type { LiveTerminal } from '../terminals/terminal.ts'
import { AGENT_TEXT, type RenderedText } from './agent-text.ts'
import type { HookError } from './protocol.ts'
import type { RunLog } from './run-log.ts'

export interface MemberSpec {
  runId: string
  sessionId: string
  sessionCwd: string
  seq: number
  prompt: string
  label: string
  profileName: string
  profile: AgentProfile
  /** Where result files go (one directory per run). */
  resultDir: string
}

export type MemberOutcome = { result: AgentResult } | { error: HookError }

type Ended = 'exited' | 'closed' | 'cancelled'

export class Member {
  readonly seq: number
  readonly #spec: MemberSpec
  readonly #host: TerminalHost
  readonly #log: RunLog
  readonly #cancel = new AbortController()
  #done: Promise<MemberOutcome> | undefined

  constructor(spec: MemberSpec, host: TerminalHost, log: RunLog) {
    this.seq = spec.seq
    this.#spec = spec
    this.#host = host
    this.#log = log
  }

  get terminalId(): string {
    return `${this.#spec.runId}-${this.seq}`
  }

  /** Starts it (once); resolves with the agent's result, or a fatal error when it never started. */
  start(): Promise<MemberOutcome> {
    this.#done ??= this.#run()
    return this.#done
  }

  /** Ends it `cancelled` (if it is still open) and resolves once its end is logged. */
  async cancel(): Promise<void> {
    this.#cancel.abort()
    await this.#done?.catch(() => undefined)
  }

  async #run(): Promise<MemberOutcome> {
    const { sessionId, seq, label, profileName, prompt, profile } = this.#spec
    const id = this.terminalId
    let terminal: LiveTerminal
    try {
      terminal = await this.#host.createProgram(sessionId, id, this.#program())
    } catch (error) {
      const message = (error as Error).message
      // A terminal that exists (a spawn that failed after its row was written) is a member that
      // started and failed; otherwise nothing was published and the call is a fatal AGENT_START.
      if (
        !(await this.#host.info(sessionId, id).then(
          () => true,
          () => false,
        ))
      ) {
        return { error: { code: 'AGENT_START', message: `agent ${seq} could not start: ${message}`, fatal: true } }
      }
      await this.#log.append('workflow/agent-start', { seq, label, profile: profileName, terminal: id, at: Date.now() })
      await this.#close()
      await this.#log.append('workflow/agent-end', { seq, outcome: 'failed', exitCode: null, at: Date.now() })
      return { result: { stopReason: 'error', text: message, truncated: false, exitCode: null, terminal: id, seq } }
    }
    await this.#log.append('workflow/agent-start', { seq, label, profile: profileName, terminal: id, at: Date.now() })
    terminal.holds++
    try {
      if (profile.prompt === 'stdin') this.#type(terminal, prompt)
      const ended = await this.#ended(terminal)
      const { text, truncated } = ended === 'exited' ? await this.#textUnlessCancelled(terminal) : { text: '', truncated: false }
      await this.#close()
      const outcome: AgentOutcome =
        ended !== 'exited' ? 'cancelled' : terminal.exitCode === 0 && !terminal.exitSignal ? 'completed' : 'failed'
      await this.#log.append('workflow/agent-end', { seq, outcome, exitCode: terminal.exitCode, at: Date.now() })
      const stopReason = outcome === 'completed' ? 'completed' : outcome === 'failed' ? 'error' : 'cancelled'
      return { result: { stopReason, text, truncated, exitCode: terminal.exitCode, terminal: id, seq } }
    } finally {
      terminal.holds--
    }
  }

  #program() {
    const { runId, seq, prompt, label, profile, sessionCwd, resultDir } = this.#spec
    const env: Record<string, string> = {
      ...profile.env,
      TERMKEEP_RESULT_FILE: join(resultDir, `${seq}.result`),
      TERMKEEP_WORKFLOW_RUN: runId,
      TERMKEEP_WORKFLOW_MEMBER: String(seq),
    }
    if (profile.prompt === 'env') env.TERMKEEP_PROMPT = prompt
    const command = profile.prompt === 'argument' ? [...profile.command, prompt] : [...profile.command]
    const cwd = profile.cwd ? resolve(sessionCwd, profile.cwd) : sessionCwd
    return { command, cwd, env, title: label, geometry: { cols: AGENT_COLS, rows: AGENT_ROWS }, workflow: { run: runId, seq } }
  }

  /** A `stdin` prompt is typed: its lines (checked to fit the tty's line buffer), Enter, Ctrl-D. */
  #type(terminal: LiveTerminal, prompt: string): void {
    try {
      terminal.inject(new TextEncoder().encode(`${prompt.replace(/\r?\n/g, '\r')}\r\x04`))
    } catch {
      // It exited already: nothing reads its input.
    }
  }

  /** How the terminal's program ended: it exited, someone closed its terminal, or the run cancelled. */
  async #ended(terminal: LiveTerminal): Promise<Ended> {
    const signal = this.#cancel.signal
    for (;;) {
      if (signal.aborted) return 'cancelled'
      if (terminal.closeRequested) return 'closed'
      if (terminal.state !== 'starting' && terminal.state !== 'running') return 'exited'
      await terminal.changes.wait(60_000, signal)
    }
  }

  /** The agent's text, or none once the run cancels it: a cancel never waits on a read. */
  #textUnlessCancelled(terminal: LiveTerminal): Promise<RenderedText> {
    const signal = this.#cancel.signal
    const none: RenderedText = { text: '', truncated: false }
    if (signal.aborted) return Promise.resolve(none)
    return new Promise((resolve) => {
      const cancelled = () => resolve(none)
      signal.addEventListener('abort', cancelled, { once: true })
      void this.#text(terminal)
        .catch(() => none)
        .then((text) => {
          signal.removeEventListener('abort', cancelled)
          resolve(text)
        })
    })
  }

  /**
   * The result file if the agent wrote one (a regular file, not a link), else the rendered output.
   * Opened non-blocking: a FIFO the agent left at the path would otherwise hold the open (and a
   * libuv thread) until something writes to it; it is not a regular file, so it is not read.
   */
  async #text(terminal: LiveTerminal): Promise<RenderedText> {
    const file = join(this.#spec.resultDir, `${this.seq}.result`)
    const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY).catch(
      () => undefined,
    )
    if (handle) {
      try {
        if ((await handle.stat()).isFile()) {
          const buffer = Buffer.alloc(MAX_AGENT_TEXT_BYTES + 4)
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
          return headOf(buffer.subarray(0, bytesRead))
        }
      } finally {
        await handle.close()
      }
    }
    return this.#rendered(terminal)
  }

  async #rendered(terminal: LiveTerminal): Promise<RenderedText> {
    const { journal, emulator } = terminal
    // The last bytes may still be on their way (EOF comes once every holder of the tty is gone).
    await journal.untilEnded(CLOSE_DRAIN_MS)
    await untilCaughtUp(emulator, DISPLAY_DRAIN_MS)
    return emulator.request<RenderedText>(AGENT_TEXT, { maxBytes: MAX_AGENT_TEXT_BYTES }).catch(() => ({ text: '', truncated: false }))
  }

  async #close(): Promise<void> {
    await this.#host.close(this.#spec.sessionId, this.terminalId).catch((error: unknown) => {
      console.error(`termkeep sidecar: closing workflow member ${this.terminalId}`, error)
    })
  }
}

/** Pure: the first MAX_AGENT_TEXT_BYTES of a result file as text, never half a character. */
export function headOf(bytes: Uint8Array): RenderedText {
  if (bytes.length <= MAX_AGENT_TEXT_BYTES) return { text: new TextDecoder().decode(bytes), truncated: false }
  let end = MAX_AGENT_TEXT_BYTES
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end-- // bytes[end] continues a character: cut before it
  return { text: new TextDecoder().decode(bytes.subarray(0, end)), truncated: true }
}
