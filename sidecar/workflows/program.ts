/**
 * The program of a run's script process (seed 003's script API). It runs in a process of its own
 * that can read no file at all (sidecar/workflows/process.ts), so it is not loaded as a module:
 * `scriptProgram()` serializes `runScript` (Function.prototype.toString) and the process evaluates
 * that text. Hence `runScript` refers to nothing outside its own body: this file imports types only.
 *
 * Inside, the script is the body of an async function in a fresh `node:vm` context whose globals
 * are the helpers `agent`, `parallel`, `pipeline`, `readText`, `log` and `input` (no `require`,
 * `process`, timers, filesystem or network). Hook misuse (bad arguments, an unknown option, a limit
 * exceeded, an unknown profile) throws a fatal WorkflowError (`error.fatal`, `error.code`); the
 * first one dooms the run: every later hook call but log() throws it again and the run ends `error`
 * with it, even if the script caught it. `parallel`/`pipeline` rethrow fatal errors; an ordinary error of an
 * item, or an agent that did not complete, makes that item `null`.
 */
import type * as Util from 'node:util'
import type * as Vm from 'node:vm'
import type { FromScript, ScriptStart, ToScript } from './protocol.ts'

/** The text the script process evaluates: an expression whose value is `runScript`. */
export function scriptProgram(): string {
  // tsx compiles with esbuild's keepNames, which wraps functions in a module-level `__name`
  // helper; the serialized body gets a stand-in of its own.
  return `((__name) => (${String(runScript)}))((target) => target)`
}

type Distribute<T> = T extends unknown ? Omit<T, 'call'> : never
type Request = Distribute<Extract<FromScript, { call: number }>>

interface Realm {
  parse(text: string): unknown
  Error: ErrorConstructor
  AsyncFunction: new (body: string) => () => Promise<unknown>
  Array: ArrayConstructor
  ObjectPrototype: object
}

type Step = { kind: 'value'; value: unknown } | { kind: 'null' } | { kind: 'fatal'; error: unknown }

export function runScript(start: ScriptStart): void {
  const vm = process.getBuiltinModule('node:vm') as typeof Vm
  const util = process.getBuiltinModule('node:util') as typeof Util
  const { limits } = start
  const encoder = new TextEncoder()
  const bytes = (text: string) => encoder.encode(text).length
  const send = (message: FromScript) => {
    if (process.connected) process.send!(message)
  }

  const globals: Record<string, unknown> = {}
  const context = vm.createContext(globals)
  // Values the script gets are made in its own realm, so its `instanceof Error`, Array methods
  // and prototypes behave as they do for its own values.
  const realm = vm.runInContext(
    '({ parse: JSON.parse, Error, AsyncFunction: (async function () {}).constructor, Array, ObjectPrototype: Object.prototype })',
    context,
  ) as Realm
  const toScript = (value: unknown) => realm.parse(JSON.stringify(value))

  // ── failure discipline ────────────────────────────────────────────────────
  const fatals = new WeakSet<object>()
  const agentResults = new WeakSet<object>()
  let doom: Error | undefined
  const fatal = (code: string, message: string): Error => {
    const error = new realm.Error(message)
    error.name = 'WorkflowError'
    Object.assign(error, { code, fatal: true })
    fatals.add(error)
    doom ??= error
    return error
  }
  const isFatal = (error: unknown) => typeof error === 'object' && error !== null && fatals.has(error)
  const healthy = () => {
    if (doom) throw doom
  }
  const describe = (error: unknown): string => {
    if (isFatal(error)) return `${(error as { code: string }).code}: ${(error as Error).message}`
    if (typeof error !== 'object' || error === null || !('message' in error)) return `the script threw ${util.inspect(error, { depth: 2 })}`
    const { name, message, stack } = error as Error
    // The body starts on line 3 of the function the AsyncFunction constructor builds.
    const at = /<anonymous>:(\d+):(\d+)/.exec(String(stack))
    return `${name}: ${message}${at ? ` (line ${Number(at[1]) - 2})` : ''}`
  }

  // ── requests to the host ─────────────────────────────────────────────────
  let nextCall = 1
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>()
  const ask = (request: Request): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const call = nextCall++
      waiting.set(call, { resolve, reject })
      send({ ...request, call } as FromScript)
    })
  process.on('message', (message: ToScript) => {
    if (message.type === 'start') return
    const waiter = waiting.get(message.call)
    if (!waiter) return
    waiting.delete(message.call)
    if (message.error) {
      const { code, message: text, fatal: isFatalError } = message.error
      waiter.reject(isFatalError ? fatal(code, text) : Object.assign(new realm.Error(text), { code }))
    } else if (message.type === 'agent-result') {
      const result = toScript(message.result) as object
      agentResults.add(result)
      waiter.resolve(result)
    } else {
      waiter.resolve(toScript(message.page))
    }
  })

  // ── helpers ───────────────────────────────────────────────────────────────
  const AGENT_OPTIONS = ['label', 'profile']
  const profileList = () => (start.profiles.length > 0 ? start.profiles.join(', ') : 'none')
  let accepted = 0
  function agent(prompt: unknown, options?: unknown): Promise<unknown> {
    healthy()
    if (typeof prompt !== 'string' || prompt.trim() === '') throw fatal('INVALID_ARGUMENT', 'agent(prompt, options?) needs a prompt: a non-empty string')
    const size = bytes(prompt)
    if (size > limits.maxPromptBytes) throw fatal('PROMPT_CAP', `a prompt is at most ${limits.maxPromptBytes} bytes (this one is ${size})`)
    if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
      throw fatal('INVALID_ARGUMENT', 'agent() options are an object, e.g. {label: "review", profile: "default"}')
    }
    const given = (options ?? {}) as Record<string, unknown>
    for (const key of Object.keys(given)) {
      if (!AGENT_OPTIONS.includes(key)) throw fatal('UNSUPPORTED_OPTION', `agent() has no option "${key}" (its options: ${AGENT_OPTIONS.join(', ')})`)
    }
    const { label, profile } = given
    if (label !== undefined && typeof label !== 'string') throw fatal('INVALID_ARGUMENT', 'agent() option "label" is a string')
    if (profile !== undefined && typeof profile !== 'string') throw fatal('INVALID_ARGUMENT', 'agent() option "profile" is a string')
    const chosen = profile ?? start.defaultProfile
    if (start.profiles.length === 0) throw fatal('UNKNOWN_PROFILE', "no agent profiles are configured (the sidecar's TERMKEEP_AGENTS)")
    if (chosen === null) throw fatal('UNKNOWN_PROFILE', `agent() names no profile and the run has none; name one of: ${profileList()}`)
    if (!start.profiles.includes(chosen)) throw fatal('UNKNOWN_PROFILE', `no agent profile "${chosen}" (configured: ${profileList()})`)
    if (accepted >= limits.maxAgents) throw fatal('AGENT_CAP', `a run makes at most ${limits.maxAgents} agent() calls`)
    accepted++
    return ask({ type: 'agent', prompt, label, profile: chosen })
  }

  /** One item's or stage's outcome: an agent that did not complete and ordinary errors are `null`. */
  async function step(run: () => unknown): Promise<Step> {
    try {
      const value = await run()
      if (typeof value === 'object' && value !== null && agentResults.has(value)) {
        const result = value as { stopReason: string; text: string }
        return result.stopReason === 'completed' ? { kind: 'value', value: result.text } : { kind: 'null' }
      }
      return { kind: 'value', value }
    } catch (error) {
      return isFatal(error) ? { kind: 'fatal', error } : { kind: 'null' }
    }
  }

  function checkItems(name: string, items: unknown): unknown[] {
    if (!Array.isArray(items)) throw fatal('INVALID_ARGUMENT', `${name} needs an array of items`)
    if (items.length > limits.maxItems) throw fatal('ITEM_CAP', `${name} takes at most ${limits.maxItems} items (got ${items.length})`)
    return [...items]
  }

  /** Runs every item at once; the first fatal error rejects at once, the rest are null or values. */
  function all(items: unknown[], run: (item: unknown, index: number) => Promise<Step>): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      const out: unknown[] = items.map(() => null)
      let left = items.length
      if (left === 0) return resolve(realm.Array.from(out))
      items.forEach((item, index) => {
        void run(item, index).then((outcome) => {
          if (outcome.kind === 'fatal') return reject(outcome.error)
          if (outcome.kind === 'value') out[index] = outcome.value
          if (--left === 0) resolve(realm.Array.from(out))
        })
      })
    })
  }

  function parallel(items: unknown, fn?: unknown): Promise<unknown[]> {
    healthy()
    const list = checkItems('parallel(items, fn)', items)
    if (fn !== undefined && typeof fn !== 'function') throw fatal('INVALID_ARGUMENT', 'parallel(items, fn): fn is a function')
    if (fn === undefined && !list.every((item) => typeof item === 'function')) {
      throw fatal('INVALID_ARGUMENT', 'parallel(thunks) takes an array of functions; to map items, call parallel(items, fn)')
    }
    const call = fn as ((item: unknown, index: number) => unknown) | undefined
    return all(list, (item, index) => step(() => (call ? call(item, index) : (item as (index: number) => unknown)(index))))
  }

  function pipeline(items: unknown, ...stages: unknown[]): Promise<unknown[]> {
    healthy()
    const list = checkItems('pipeline(items, ...stages)', items)
    if (stages.length === 0 || !stages.every((stage) => typeof stage === 'function')) {
      throw fatal('INVALID_ARGUMENT', 'pipeline(items, ...stages) needs at least one stage, each a function (previous, item, index)')
    }
    const calls = stages as ((previous: unknown, item: unknown, index: number) => unknown)[]
    // No barrier between stages: each item moves on as soon as its own stage is done.
    return all(list, async (item, index) => {
      let previous: unknown = item
      for (const stage of calls) {
        const outcome = await step(() => stage(previous, item, index))
        if (outcome.kind !== 'value') return outcome
        previous = outcome.value
      }
      return { kind: 'value', value: previous }
    })
  }

  function readText(address: unknown): Promise<unknown> {
    healthy()
    let request: unknown
    if (typeof address === 'string') request = { address }
    else if (typeof address === 'object' && address !== null && 'cursor' in address) request = { next: JSON.parse(JSON.stringify(address)) }
    else if (typeof address === 'object' && address !== null) request = JSON.parse(JSON.stringify(address))
    else throw fatal('INVALID_ARGUMENT', 'readText(address) takes an address ("path", "attachment:ID", "tool-result:ID"), a page\'s `next`, or {address, offset, limit}')
    return ask({ type: 'read-text', request })
  }

  let logBytes = 0
  let logCount = 0
  // Not doomed by a fatal error (it starts nothing): a script may report the error it caught.
  function log(...args: unknown[]): void {
    const message = args.map((arg) => (typeof arg === 'string' ? arg : util.inspect(arg, { depth: 4, breakLength: Infinity }))).join(' ')
    const size = bytes(message)
    if (size > limits.maxLogMessageBytes) throw fatal('LOG_CAP', `one log message is at most ${limits.maxLogMessageBytes} bytes (this one is ${size})`)
    if (logBytes + size > limits.maxLogBytes || logCount >= limits.maxLogMessages) {
      throw fatal('LOG_CAP', `a run logs at most ${limits.maxLogMessages} messages and ${limits.maxLogBytes} bytes`)
    }
    logBytes += size
    logCount++
    send({ type: 'log', message })
  }

  // ── the result ────────────────────────────────────────────────────────────
  /** Why `value` would not come back as it is from JSON, or undefined when it would. */
  const unlike = (value: unknown, depth: number, seen: Set<object>): string | undefined => {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined
    if (typeof value === 'number') return Number.isFinite(value) ? undefined : `the number ${value}`
    if (typeof value !== 'object') return `a ${typeof value}`
    if (seen.has(value) || depth > 200) return 'a cycle or a structure nested over 200 deep'
    seen.add(value)
    const proto = Object.getPrototypeOf(value)
    if (!Array.isArray(value) && proto !== null && proto !== realm.ObjectPrototype && proto !== Object.prototype) {
      return `a ${(value as object).constructor?.name ?? 'class instance'} (only plain objects and arrays)`
    }
    const entries = Array.isArray(value) ? Array.from(value, (item, i) => [String(i), item] as const) : Object.entries(value)
    for (const [key, item] of entries) {
      const problem = item === undefined ? 'undefined' : unlike(item, depth + 1, seen)
      if (problem) return `${problem} at ${key}`
    }
    seen.delete(value)
    return undefined
  }
  const failed = (error: unknown) => send({ type: 'done', stopReason: 'error', error: describe(doom ?? error), agentsStarted: accepted })
  const completed = (value: unknown) => {
    if (doom) return failed(doom)
    const problem = value === undefined ? undefined : unlike(value, 0, new Set())
    if (problem) return failed(fatal('RESULT_UNSERIALIZABLE', `the return value is not plain JSON: ${problem}`))
    const json = value === undefined ? 'null' : JSON.stringify(value)
    const size = bytes(json)
    if (size > limits.maxResultBytes) return failed(fatal('RESULT_CAP', `the return value is at most ${limits.maxResultBytes} bytes as JSON (it is ${size})`))
    send({ type: 'done', stopReason: 'completed', value: json, agentsStarted: accepted })
  }

  // A floating agent() promise that rejects is the script's business, not a crash.
  process.on('unhandledRejection', () => {})
  process.on('uncaughtException', failed)
  Object.assign(globals, { agent, parallel, pipeline, readText, log })
  globals.input = start.input === undefined ? undefined : realm.parse(start.input)
  let body: () => Promise<unknown>
  try {
    body = new realm.AsyncFunction(start.script)
  } catch (error) {
    return failed(error)
  }
  body().then(completed, failed)
}
