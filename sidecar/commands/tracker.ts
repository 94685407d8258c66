/**
 * One terminal's commands, derived from its journal (docs/commands.md). The tracker reads the
 * journal like any other reader, at its own pace and off the byte path (the PTY and the journal's
 * other readers never wait for it), finds the command marks in it (marks.ts) and keeps a record
 * per command: its command line, directory, output cursors, exit code and times. Each record is
 * written to libSQL when it starts and when it ends (store.ts), in order, retried while the
 * database cannot take it.
 *
 * Trust: a terminal whose shell termkeep integrated has a nonce, and only marks carrying it count;
 * the same bytes printed by any program (`cat` of a file holding marks) are output like any other.
 * A terminal without integration takes any mark, from a prompt that emits its own ('detected').
 */
import { COMMANDS_KEPT_PER_TERMINAL, COMMAND_TEXT_MAX_BYTES, MAX_RECORDED_COMMAND_CHARS } from '../../schema/limits.ts'
import type { CommandRecord } from '../../schema/wire/commands.ts'
import { isDatabaseUnavailable } from '../../storage/unavailable.ts'
import type { Journal } from '../journal/journal.ts'
import { Notifier } from '../journal/notifier.ts'
import { Retry } from '../write-retry.ts'
import { MarkScanner, type Mark, type Position } from './marks.ts'
import type { CommandStore } from '../../storage/commands.ts'
import { ByteTail, commandText } from './text.ts'

/** Journal bytes one read takes (as the emulator's feed: bounded transient memory). */
const READ_WINDOW_BYTES = 1024 * 1024
/** The wait between checks of an idle journal (every append wakes the tracker anyway). */
const IDLE_WAIT_MS = 60_000

/** Where the shell is, as its marks tell. */
export type Phase = 'unknown' | 'prompt' | 'input' | 'running' | 'ended'

export interface TrackerOptions {
  sessionId: string
  terminalId: string
  journal: Journal
  store: CommandStore
  /** The terminal's nonce when termkeep integrated its shell; undefined: none (any mark counts). */
  nonce: string | undefined
  /** Told once when a terminal without integration shows marks of its own. */
  onDetected?: () => void
}

/** A record, with its output while it runs (and its text once it ended, until written). */
interface Tracked {
  record: CommandRecord
  tail?: ByteTail
  /** Where the output began in the whole output (bytes), to take back an end mark's bytes. */
  startAbs: number
  text?: { text: string; omittedBytes: number }
}

export class CommandTracker {
  readonly #options: TrackerOptions
  readonly #journal: Journal
  readonly #scanner = new MarkScanner()
  readonly #records: Tracked[] = []
  readonly #retry: Retry
  readonly #queue: (() => Promise<void>)[] = []
  #writing: Promise<void> | undefined
  #detected = false
  #running: Tracked | undefined
  #pendingLine: string | undefined
  #expected: string | undefined
  #lastData = { sequence: 0, length: 0, abs: 0 }
  /** The whole-output offset just past the last byte handed to the running command's tail. */
  #fedAbs = 0
  #lastEnded: Tracked | undefined
  #leaving = false
  /** Wakes waiters on any change: a mark, a record, input, the end. */
  readonly changes = new Notifier()
  phase: Phase = 'unknown'
  /** The newest command number (0: none yet). */
  newest = 0
  /** Prompts seen so far (A marks): a run tells from it that the shell came back. */
  prompts = 0
  /** Lines the line editor accepted (bracketed paste turned off): a prompt drawn again while a
   * line is being edited (a long pasted line wraps, Ctrl-L) is no prompt after it. */
  accepted = 0
  cwd: string | null = null
  bracketedPaste = false
  /** Something was typed since the prompt (a half-typed line a command must not be appended to). */
  inputSincePrompt = false
  /** A run is typing or waiting (one at a time). */
  reserved = false
  /** The journal ended (or was retired) and every record in it was read. */
  finished = false
  readonly done: Promise<void>

  constructor(options: TrackerOptions) {
    this.#options = options
    this.#journal = options.journal
    this.#retry = new Retry(`persisting commands of terminal ${options.sessionId}/${options.terminalId}`)
    this.done = this.#pump().catch((error: unknown) => {
      console.error(`termkeep sidecar: reading commands of terminal ${options.sessionId}/${options.terminalId} failed`, error)
      this.finished = true
      this.changes.notify()
    })
  }

  get marks(): 'injected' | 'detected' {
    return this.#options.nonce === undefined ? 'detected' : 'injected'
  }

  /** The command a run is typing: the record's command line when the shell reports none (bash
   * when HISTCONTROL kept the line out of its history). */
  expect(command: string): void {
    this.#expected = command.slice(0, MAX_RECORDED_COMMAND_CHARS)
  }

  /** Input reached the shell (from anyone): the prompt is no longer empty. */
  typed(): void {
    if (this.phase !== 'input' || this.inputSincePrompt) return
    this.inputSincePrompt = true
    this.changes.notify()
  }

  /** This sidecar stops and the terminal goes on in the keeper: call before its journal is
   * retired here; a command still running is left running in its record. */
  leave(): void {
    this.#leaving = true
  }

  /** The kept records, oldest first. */
  records(): CommandRecord[] {
    return this.#records.map((t) => t.record)
  }

  record(n: number): CommandRecord | undefined {
    return this.#find(n)?.record
  }

  /** The text of a running command so far, or of an ended one not yet written; else undefined. */
  textOf(n: number): { text: string; omittedBytes: number; outputBytes: number } | undefined {
    const tracked = this.#find(n)
    if (!tracked) return undefined
    if (tracked.text) return { ...tracked.text, outputBytes: tracked.record.outputBytes ?? 0 }
    if (!tracked.tail) return undefined
    const { bytes, omitted } = tracked.tail.bytes()
    return {
      text: commandText(bytes, this.#journal.geometryAt(this.#journal.lastSequence).cols),
      omittedBytes: omitted,
      outputBytes: tracked.tail.total,
    }
  }

  /** Every record change so far is in the database (or failed and waits for a retry). */
  async flushed(): Promise<void> {
    while (this.#writing) await this.#writing
  }

  #find(n: number): Tracked | undefined {
    const first = this.#records[0]?.record.n ?? 1
    return this.#records[n - first]
  }

  async #pump(): Promise<void> {
    const release = this.#journal.attach()
    try {
      let cursor = 0
      for (;;) {
        // The bytes are scanned (and what a command keeps of them copied) before the read is let go.
        const read = await this.#journal.useRecords(cursor, READ_WINDOW_BYTES, (records) => {
          for (const record of records) {
            if (record.kind === 'data') this.#feed(record.bytes, record.sequence)
            cursor = record.sequence
          }
          return records.length
        })
        if (read > 0) continue
        if (this.#journal.ended || this.#journal.retired) break
        await this.#journal.wait(cursor, IDLE_WAIT_MS)
      }
    } finally {
      release()
    }
    // The output ended (or the keeper ended, or the terminal closed) with a command still running:
    // it ends there, its exit unknown. Not when this sidecar leaves the terminal to the keeper: the
    // command runs on, and the next sidecar's tracker reads on to its end.
    if (this.#running && !this.#leaving) {
      const { sequence, length, abs } = this.#lastData
      this.#end(null, { sequence, offset: length, abs })
    }
    this.finished = true
    this.changes.notify()
  }

  #feed(bytes: Uint8Array, sequence: number): void {
    const base = this.#lastData.abs
    const marks = this.#scanner.feed(bytes, sequence)
    let at = 0
    for (const mark of marks) {
      if (!this.#accept(mark)) continue
      const upto = mark.end.sequence === sequence ? Math.max(at, mark.end.offset) : at
      this.#running?.tail?.add(bytes.subarray(at, upto))
      at = upto
      this.#fedAbs = base + upto
      this.#apply(mark, bytes.length)
    }
    this.#running?.tail?.add(bytes.subarray(at))
    this.#lastData = { sequence, length: bytes.length, abs: base + bytes.length }
    this.#fedAbs = base + bytes.length
  }

  #accept(mark: Mark): boolean {
    if (mark.kind === 'paste') return true
    const nonce = this.#options.nonce
    if (nonce !== undefined) return mark.nonce === nonce
    if (!this.#detected && mark.kind !== 'cwd') {
      this.#detected = true
      this.#options.onDetected?.()
    }
    return true
  }

  #apply(mark: Mark, recordLength: number): void {
    switch (mark.kind) {
      case 'paste':
        // A line editor turns bracketed paste off when it accepts a line.
        if (this.bracketedPaste && mark.on !== true) this.accepted++
        this.bracketedPaste = mark.on === true
        return
      case 'cwd':
        this.cwd = mark.cwd ?? null
        break
      case 'E':
        this.#pendingLine = (mark.commandLine ?? '').slice(0, MAX_RECORDED_COMMAND_CHARS)
        break
      case 'A':
        // A new prompt: one that never said D ended the command it interrupts.
        if (this.#running) this.#end(null, mark.start)
        this.phase = 'prompt'
        this.inputSincePrompt = false
        this.#expected = undefined
        this.prompts++
        break
      case 'B':
        // The prompt drawn (again, on a redisplay: nothing typed since is forgotten).
        if (this.#running) this.#end(null, mark.start)
        if (this.phase === 'prompt' || this.phase === 'unknown') this.phase = 'input'
        break
      case 'C':
        if (this.#running) this.#end(null, mark.start)
        this.#start(mark.end, recordLength)
        this.phase = 'running'
        break
      case 'D':
        if (this.#running) {
          this.#end(mark.exitCode ?? null, mark.start)
          this.phase = 'ended'
        }
        break
    }
    this.changes.notify()
  }

  /** A command's output starts at `at` (just after the C mark; `recordLength`: that record's). */
  #start(at: Position, recordLength: number): void {
    const whole = at.offset >= recordLength
    const record: CommandRecord = {
      n: ++this.newest,
      command: this.#pendingLine || this.#expected || '',
      cwd: this.cwd,
      state: 'running',
      start: whole ? at.sequence : at.sequence - 1,
      startSkip: whole ? 0 : at.offset,
      end: null,
      endLength: null,
      exitCode: null,
      startedAt: this.#timeOf(at.sequence),
      endedAt: null,
      marks: this.marks,
      outputBytes: null,
    }
    this.#pendingLine = undefined
    this.#expected = undefined
    const tracked: Tracked = { record, tail: new ByteTail(COMMAND_TEXT_MAX_BYTES), startAbs: at.abs }
    this.#running = tracked
    this.#records.push(tracked)
    const { sessionId, terminalId } = this.#options
    this.#write((store) => store.start({ sessionId, terminalId, ...row(record) }))
    this.#prune()
  }

  /** The running command ends where its end mark (or the next prompt) starts: `at`. */
  #end(exitCode: number | null, at: Position): void {
    const tracked = this.#running!
    this.#running = undefined
    const tail = tracked.tail!
    // The marker's own bytes were taken as output until it was complete.
    tail.retract(Math.max(0, this.#fedAbs - Math.max(at.abs, tracked.startAbs)))
    const { bytes, omitted } = tail.bytes()
    const text = commandText(bytes, this.#journal.geometryAt(at.sequence).cols)
    tracked.tail = undefined
    tracked.text = { text, omittedBytes: omitted }
    const record = tracked.record
    Object.assign(record, {
      state: 'ended',
      end: at.sequence,
      endLength: at.offset,
      exitCode,
      endedAt: this.#timeOf(at.sequence),
      outputBytes: tail.total,
    } satisfies Partial<CommandRecord>)
    const { sessionId, terminalId } = this.#options
    const end = { endSequence: record.end, endLength: record.endLength, exitCode, endedAt: record.endedAt, outputBytes: record.outputBytes }
    this.#write((store) => store.end(sessionId, terminalId, record.n, { ...end, outputText: text, outputOmitted: omitted }))
    // Memory keeps the newest ended command's text only (a run answers with it; the queued write
    // holds the older one's until it lands).
    if (this.#lastEnded) this.#lastEnded.text = undefined
    this.#lastEnded = tracked
  }

  #timeOf(sequence: number): number {
    return Math.round(this.#journal.startedAt + this.#journal.timeAt(sequence))
  }

  #prune(): void {
    const excess = this.#records.length - COMMANDS_KEPT_PER_TERMINAL
    if (excess <= 0) return
    const gone = this.#records.splice(0, excess)
    const last = gone.at(-1)!.record.n
    const { sessionId, terminalId } = this.#options
    this.#write((store) => store.prune(sessionId, terminalId, last))
  }

  /** Queues a write; writes run one at a time, in order. */
  #write(write: (store: CommandStore) => Promise<void>): void {
    this.#queue.push(() => write(this.#options.store))
    if (!this.#retry.pending) this.#writing ??= this.#drain()
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        try {
          await this.#queue[0]!()
        } catch (error) {
          if (isDatabaseUnavailable(error)) {
            this.#retry.failed(error, () => (this.#writing ??= this.#drain()))
            return
          }
          console.error(`termkeep sidecar: persisting a command of ${this.#options.sessionId}/${this.#options.terminalId} failed`, error)
        }
        this.#queue.shift()
        this.#retry.succeeded()
      }
    } finally {
      this.#writing = undefined
    }
  }
}

/** Pure: the columns of a record's row (its output text is written when it ends). */
function row(record: CommandRecord) {
  return {
    n: record.n,
    command: record.command,
    cwd: record.cwd,
    startSequence: record.start,
    startSkip: record.startSkip,
    endSequence: null,
    endLength: null,
    exitCode: null,
    startedAt: record.startedAt,
    endedAt: null,
    marks: record.marks,
    outputBytes: null,
    outputText: null,
    outputOmitted: null,
  }
}
