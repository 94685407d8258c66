/**
 * The script API (seed 003) as it lives inside the script's own `node:vm` realm. program.ts
 * evaluates this file's functions as source in the context (Function.prototype.toString), so every
 * helper, Promise, Error, array and object the script can touch is made by the context's own
 * intrinsics: a script that walks `.constructor.constructor` from anything it was given reaches
 * the context's Function, in whose realm `process`, `require` and the host do not exist. These
 * functions refer to nothing outside their own bodies (this file imports types only).
 *
 * The only thing of the host's that the context ever holds is the bridge `hostSend(text)`, kept in
 * a closure here, never in a global or an object the script can read, and always called directly
 * (never through `.call`, a getter or any method the script could replace). Only strings cross:
 * JSON text to the host, JSON text back through the `receive(text)` this returns.
 *
 * Hook misuse (bad arguments, an unknown option, a limit exceeded, an unknown profile) throws a
 * fatal WorkflowError (`error.fatal`, `error.code`); the first one dooms the run: every later hook
 * call but log() throws it again and the run ends `error` with it, even if the script caught it.
 * `parallel`/`pipeline` rethrow fatal errors; an ordinary error of an item, or an agent that did
 * not complete, makes that item `null`. The host tracks the fatal errors it sent on its own.
 */
import type { FromScript, ScriptStart, ToScript } from './protocol.ts'

type Distribute<T> = T extends unknown ? Omit<T, 'call'> : never
type Request = Distribute<Extract<FromScript, { call: number }>>
type Reply = Exclude<ToScript, { type: 'start' }>
type Step = { kind: 'value'; value: unknown } | { kind: 'null' } | { kind: 'fatal'; error: unknown }
export type Inspect = (value: unknown, depth: number) => string

/** Installs the helpers as the context's globals and starts the script; returns the reply inlet. */
export function realmMain(hostSend: (text: string) => void, startText: string, inspect: Inspect): (text: string) => void {
  // Captured before the script runs: it may replace globals, never these bindings.
  const { JSON, Object, Array, Number, Error, Promise, WeakSet, Map, String } = globalThis
  const parse = JSON.parse
  const stringify = JSON.stringify
  const start = parse(startText) as ScriptStart
  const { limits } = start
  const send = (message: FromScript) => {
    const text = stringify(message)
    try {
      hostSend(text)
    } catch {
      // Nothing the host throws is let in (the bridge never throws; a stack overflow might).
    }
  }
  const bytes = (text: string) => {
    let size = 0
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (code < 0x80) size += 1
      else if (code < 0x800) size += 2
      else if (code >= 0xd800 && code < 0xdc00 && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        size += 4
        i++
      } else size += 3
    }
    return size
  }

  // ── failure discipline ────────────────────────────────────────────────────
  const fatals = new WeakSet<object>()
  const agentResults = new WeakSet<object>()
  let doom: Error | undefined
  const fatal = (code: string, message: string): Error => {
    const error = new Error(message)
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
    if (typeof error !== 'object' || error === null || !('message' in error)) return `the script threw ${inspect(error, 2)}`
    const { name, message, stack } = error as Error
    // The body starts on line 3 of the function the AsyncFunction constructor builds.
    const at = /<anonymous>:(\d+):(\d+)/.exec(String(stack))
    return `${String(name)}: ${String(message)}${at ? ` (line ${Number(at[1]) - 2})` : ''}`
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
  function receive(text: string): void {
    const message = parse(text) as Reply
    const waiter = waiting.get(message.call)
    if (!waiter) return
    waiting.delete(message.call)
    if (message.error) {
      const { code, message: reason, fatal: isFatalError } = message.error
      waiter.reject(isFatalError ? fatal(code, reason) : Object.assign(new Error(reason), { code }))
    } else if (message.type === 'agent-result') {
      const result = message.result as object
      agentResults.add(result)
      waiter.resolve(result)
    } else {
      waiter.resolve(message.page)
    }
  }

  // ── helpers ───────────────────────────────────────────────────────────────
  const AGENT_OPTIONS = ['label', 'profile']
  const profileList = () => (start.profiles.length > 0 ? start.profiles.join(', ') : 'none')
  let accepted = 0
  function agent(prompt: unknown, options?: unknown): Promise<unknown> {
    healthy()
    if (typeof prompt !== 'string' || prompt.trim() === '')
      throw fatal('INVALID_ARGUMENT', 'agent(prompt, options?) needs a prompt: a non-empty string')
    const size = bytes(prompt)
    if (size > limits.maxPromptBytes) throw fatal('PROMPT_CAP', `a prompt is at most ${limits.maxPromptBytes} bytes (this one is ${size})`)
    if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
      throw fatal('INVALID_ARGUMENT', 'agent() options are an object, e.g. {label: "review", profile: "default"}')
    }
    const given = (options ?? {}) as Record<string, unknown>
    for (const key of Object.keys(given)) {
      if (!AGENT_OPTIONS.includes(key))
        throw fatal('UNSUPPORTED_OPTION', `agent() has no option "${key}" (its options: ${AGENT_OPTIONS.join(', ')})`)
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
      if (left === 0) return resolve(out)
      items.forEach((item, index) => {
        void run(item, index).then((outcome) => {
          if (outcome.kind === 'fatal') return reject(outcome.error)
          if (outcome.kind === 'value') out[index] = outcome.value
          if (--left === 0) resolve(out)
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
    else if (typeof address === 'object' && address !== null && 'cursor' in address) request = { next: parse(stringify(address)) }
    else if (typeof address === 'object' && address !== null) request = parse(stringify(address))
    else
      throw fatal(
        'INVALID_ARGUMENT',
        'readText(address) takes an address ("path", "attachment:ID", "tool-result:ID"), a page\'s `next`, or {address, offset, limit}',
      )
    return ask({ type: 'read-text', request })
  }

  let logBytes = 0
  let logCount = 0
  // Not doomed by a fatal error (it starts nothing): a script may report the error it caught.
  function log(...args: unknown[]): void {
    const message = args.map((arg) => (typeof arg === 'string' ? arg : inspect(arg, 4))).join(' ')
    const size = bytes(message)
    if (size > limits.maxLogMessageBytes)
      throw fatal('LOG_CAP', `one log message is at most ${limits.maxLogMessageBytes} bytes (this one is ${size})`)
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
    if (!Array.isArray(value) && proto !== null && proto !== Object.prototype) {
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
  const failed = (error: unknown) => send({ type: 'done', stopReason: 'error', error: describe(doom ?? error) })
  const completed = (value: unknown) => {
    if (doom) return failed(doom)
    const problem = value === undefined ? undefined : unlike(value, 0, new Set())
    if (problem) return failed(fatal('RESULT_UNSERIALIZABLE', `the return value is not plain JSON: ${problem}`))
    const json = value === undefined ? 'null' : stringify(value)
    const size = bytes(json)
    if (size > limits.maxResultBytes)
      return failed(fatal('RESULT_CAP', `the return value is at most ${limits.maxResultBytes} bytes as JSON (it is ${size})`))
    send({ type: 'done', stopReason: 'completed', value: json })
  }
  const settle = (outcome: () => void) => {
    try {
      outcome()
    } catch {
      // The script broke what describing its outcome uses (a getter that throws, a replaced method).
      send({ type: 'done', stopReason: 'error', error: 'the script failed in a way that cannot be described' })
    }
  }

  const AsyncFunction = (async () => {}).constructor as new (body: string) => () => Promise<unknown>
  Object.assign(globalThis, { agent, parallel, pipeline, readText, log })
  ;(globalThis as { input?: unknown }).input = start.input === undefined ? undefined : parse(start.input)
  let body: () => Promise<unknown>
  try {
    body = new AsyncFunction(start.script)
  } catch (error) {
    settle(() => failed(error))
    return receive
  }
  // Started from a fresh job, not from the host's call into this function.
  void Promise.resolve().then(() =>
    body().then(
      (value) => settle(() => completed(value)),
      (error) => settle(() => failed(error)),
    ),
  )
  return receive
}

/**
 * util.inspect's look for the values a script logs, made in the context (the host's util.inspect
 * would hand a script's `[util.inspect.custom]` the host's own functions). Strings quoted, arrays
 * `[ 1, 2 ]`, objects `{ a: 1 }`, `[Object]` past `depth`, `[Circular]`, class names kept.
 */
export function inspectValue(value: unknown, depth: number): string {
  const { Object, Array, String, Number, Function, Error, Map, Set, Date, RegExp } = globalThis
  const MAX_ENTRIES = 100
  const seen: object[] = []
  const quote = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`
  const key = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : quote(name))
  const list = (open: string, items: string[], close: string, total: number) => {
    if (total > items.length) items.push(`... ${total - items.length} more item${total - items.length === 1 ? '' : 's'}`)
    return items.length === 0 ? `${open}${close}` : `${open} ${items.join(', ')} ${close}`
  }
  const show = (item: unknown, level: number): string => {
    if (typeof item === 'string') return quote(item)
    if (typeof item === 'bigint') return `${item}n`
    if (typeof item === 'number') return Object.is(item, -0) ? '-0' : String(item)
    if (typeof item === 'symbol') return item.toString()
    if (typeof item === 'function')
      return `[${/^class\b/.test(Function.prototype.toString.call(item)) ? 'class' : 'Function'}${item.name ? `: ${item.name}` : ' (anonymous)'}]`
    if (typeof item !== 'object' || item === null) return String(item)
    if (seen.includes(item)) return '[Circular]'
    if (item instanceof Error) return `[${String(item.name)}: ${String(item.message)}]`
    if (item instanceof Date) return Number.isNaN(item.getTime()) ? 'Invalid Date' : item.toISOString()
    if (item instanceof RegExp) return String(item)
    const proto = Object.getPrototypeOf(item)
    const name = proto === null ? '[Object: null prototype]' : ((proto.constructor?.name as string | undefined) ?? '')
    if (level > depth) {
      if (Array.isArray(item)) return item.length === 0 ? '[]' : '[Array]'
      return Object.keys(item).length === 0 && name === 'Object'
        ? '{}'
        : `[${name && name !== '[Object: null prototype]' ? name : 'Object'}]`
    }
    seen.push(item)
    try {
      const prefix = name === 'Object' || name === 'Array' ? '' : `${name} `
      if (Array.isArray(item))
        return (
          prefix +
          list(
            '[',
            item.slice(0, MAX_ENTRIES).map((entry) => show(entry, level + 1)),
            ']',
            item.length,
          )
        )
      if (item instanceof Map) {
        const entries = [...item].slice(0, MAX_ENTRIES).map(([k, v]) => `${show(k, level + 1)} => ${show(v, level + 1)}`)
        return `${name}(${item.size}) ${list('{', entries, '}', item.size)}`
      }
      if (item instanceof Set)
        return `${name}(${item.size}) ${list(
          '{',
          [...item].slice(0, MAX_ENTRIES).map((v) => show(v, level + 1)),
          '}',
          item.size,
        )}`
      const names = Object.keys(item)
      const entries = names.slice(0, MAX_ENTRIES).map((k) => `${key(k)}: ${show((item as Record<string, unknown>)[k], level + 1)}`)
      return prefix + list('{', entries, '}', names.length)
    } finally {
      seen.pop()
    }
  }
  return show(value, 0)
}
