/**
 * The script API (seed 003) as guest code: it runs inside the script's engine (QuickJS, in
 * WebAssembly) beside the script. program.ts evaluates this file's functions there as source
 * (Function.prototype.toString), so they refer to nothing outside their own bodies (this file
 * imports types only). The guest holds no host object at all: everything the script can touch
 * is the engine's own, made by this code or by the script.
 *
 * The one thing of the host's here is the bridge `hostSend(text)`, a host function held in this
 * closure, never in a global or an object, and always called directly. Only strings cross it:
 * JSON text to the host; the host answers by calling the `receive(text)` this returns, with JSON
 * text. Before the script runs, the built-ins are frozen (guest-lockdown.ts), so a script cannot
 * change the methods this code calls on its own objects; the script's own values (items,
 * options, addresses, thrown values) are read by index and property, never through a method the
 * script could have put on them.
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

/**
 * Installs the helpers as globals, freezes the built-ins (`lockdown`) and starts `body` (the
 * script compiled as an async function, or the SyntaxError compiling it threw); returns the
 * reply inlet.
 */
export function guestMain(
  hostSend: (text: string) => void,
  startText: string,
  body: unknown,
  inspect: Inspect,
  lockdown: () => void,
): (text: string) => void {
  // Captured before the script runs: it may replace globals, never these bindings.
  const { JSON, Object, Array, Number, Error, Promise, WeakSet, Map, Set, String } = globalThis
  const InternalError = (globalThis as unknown as { InternalError: ErrorConstructor }).InternalError
  const { parse, stringify } = JSON
  const { keys, hasOwn, defineProperty, freeze, getPrototypeOf } = Object
  const { isArray } = Array
  const start = parse(startText) as ScriptStart
  const { limits } = start
  const send = (message: FromScript) => {
    const text = stringify(message)
    hostSend(text)
  }
  // Sent when describing the end fails (the script broke what that uses, or memory ran out):
  // made now, so sending them needs no allocation.
  const UNDESCRIBABLE = stringify({ type: 'done', stopReason: 'error', error: 'the script failed in a way that cannot be described' })
  const OUT_OF_MEMORY = stringify({ type: 'done', stopReason: 'error', limit: 'memory', error: 'InternalError: out of memory' })
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
  /** How many UTF-16 units of `text` fit in `max` bytes of UTF-8 (never half a surrogate pair). */
  const fitting = (text: string, max: number): number => {
    let size = 0
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i)
      const pair = code >= 0xd800 && code < 0xdc00 && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00
      size += code < 0x80 ? 1 : code < 0x800 ? 2 : pair ? 4 : 3
      if (size > max) return i
      if (pair) i++
    }
    return text.length
  }
  /** `text` within `max` bytes of UTF-8: cut, saying so, when it is longer (as the host cuts it too). */
  const within = (text: string, max: number): string => {
    if (fitting(text, max) === text.length) return text
    const note = ` … (cut at ${max} bytes)`
    return text.slice(0, fitting(text, max - bytes(note))) + note
  }
  /** The script's own items: copied by index (a method of theirs is never called). */
  const copy = (items: ArrayLike<unknown>): unknown[] => {
    const out: unknown[] = []
    for (let i = 0; i < items.length; i++) out.push(items[i])
    return out
  }

  // ── failure discipline ────────────────────────────────────────────────────
  const fatals = new WeakSet<object>()
  const agentResults = new WeakSet<object>()
  let doom: Error | undefined
  const fatal = (code: string, message: string): Error => {
    const error = new Error(message)
    defineProperty(error, 'name', { value: 'WorkflowError', writable: true, configurable: true })
    defineProperty(error, 'code', { value: code, enumerable: true })
    defineProperty(error, 'fatal', { value: true, enumerable: true })
    fatals.add(error)
    doom ??= error
    return error
  }
  const isFatal = (error: unknown) => typeof error === 'object' && error !== null && fatals.has(error)
  const outOfMemory = (error: unknown) => error instanceof InternalError && (error as Error).message === 'out of memory'
  const healthy = () => {
    if (doom) throw doom
  }
  /** " (line L, column C)": the first frame in the script (its body starts on line 2 of `script`). */
  const at = (error: object): string => {
    const found = /\(script:(\d+):(\d+)\)|\bat script:(\d+):(\d+)/.exec(String((error as Error).stack))
    if (!found) return ''
    const line = Number(found[1] ?? found[3]) - 1
    return line > 0 ? ` (line ${line}, column ${Number(found[2] ?? found[4])})` : ''
  }
  const describe = (error: unknown): string => {
    if (isFatal(error)) return `${(error as { code: string }).code}: ${(error as Error).message}${at(error as object)}`
    if (typeof error !== 'object' || error === null || !('message' in error)) return `the script threw ${inspect(error, 2)}`
    const { name, message } = error as Error
    return `${String(name)}: ${String(message)}${at(error)}`
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
  /**
   * Sends requests through `limit` slots: one waits in the guest (in the script's memory) until a
   * slot is free, so the host never holds more than `limit` of them for this run. A slot passes
   * straight to the next request waiting, in order.
   */
  const gate = (limit: number) => {
    let out = 0
    const queue: (() => void)[] = []
    const release = () => {
      const next = queue.shift()
      if (next) next()
      else out--
    }
    return (request: Request): Promise<unknown> => {
      const go = () =>
        ask(request).then(
          (value) => {
            release()
            return value
          },
          (error: unknown) => {
            release()
            throw error
          },
        )
      if (out < limit) {
        out++
        return go()
      }
      return new Promise<void>((resolve) => queue.push(resolve)).then(go)
    }
  }
  const askAgent = gate(start.concurrency)
  const askRead = gate(limits.readsInFlight)
  const answer = (message: Reply) => {
    const waiter = waiting.get(message.call)
    if (!waiter) return
    waiting.delete(message.call)
    if (message.error) {
      const { code, message: reason, fatal: isFatalError } = message.error
      if (isFatalError) return waiter.reject(fatal(code, reason))
      const error = new Error(reason)
      defineProperty(error, 'code', { value: code, enumerable: true })
      waiter.reject(error)
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
  const agent = (prompt: unknown, options?: unknown): Promise<unknown> => {
    healthy()
    if (typeof prompt !== 'string' || prompt.trim() === '')
      throw fatal('INVALID_ARGUMENT', 'agent(prompt, options?) needs a prompt: a non-empty string')
    const size = bytes(prompt)
    if (size > limits.maxPromptBytes) throw fatal('PROMPT_CAP', `a prompt is at most ${limits.maxPromptBytes} bytes (this one is ${size})`)
    if (options !== undefined && (typeof options !== 'object' || options === null || isArray(options))) {
      throw fatal('INVALID_ARGUMENT', 'agent() options are an object, e.g. {label: "review", profile: "default"}')
    }
    const given = (options ?? {}) as Record<string, unknown>
    const names = keys(given)
    for (let i = 0; i < names.length; i++) {
      if (!AGENT_OPTIONS.includes(names[i]))
        throw fatal('UNSUPPORTED_OPTION', `agent() has no option "${names[i]}" (its options: ${AGENT_OPTIONS.join(', ')})`)
    }
    const label = hasOwn(given, 'label') ? given.label : undefined
    const profile = hasOwn(given, 'profile') ? given.profile : undefined
    if (label !== undefined && typeof label !== 'string') throw fatal('INVALID_ARGUMENT', 'agent() option "label" is a string')
    if (label !== undefined && label.length > limits.maxLabelUnits) {
      throw fatal('INVALID_ARGUMENT', `agent() option "label": agent labels are at most ${limits.maxLabelUnits} UTF-16 units`)
    }
    if (profile !== undefined && typeof profile !== 'string') throw fatal('INVALID_ARGUMENT', 'agent() option "profile" is a string')
    const chosen = profile ?? start.defaultProfile
    if (start.profiles.length === 0) throw fatal('UNKNOWN_PROFILE', "no agent profiles are configured (the sidecar's TERMKEEP_AGENTS)")
    if (chosen === null) throw fatal('UNKNOWN_PROFILE', `agent() names no profile and the run has none; name one of: ${profileList()}`)
    if (!start.profiles.includes(chosen)) throw fatal('UNKNOWN_PROFILE', `no agent profile "${chosen}" (configured: ${profileList()})`)
    if (accepted >= limits.maxAgents) throw fatal('AGENT_CAP', `a run makes at most ${limits.maxAgents} agent() calls`)
    accepted++
    return askAgent({ type: 'agent', prompt, label, profile: chosen })
  }

  /** One item's or stage's outcome: an agent that did not complete and ordinary errors are `null`. */
  const step = async (run: () => unknown): Promise<Step> => {
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

  const checkItems = (name: string, items: unknown): unknown[] => {
    if (!isArray(items)) throw fatal('INVALID_ARGUMENT', `${name} needs an array of items`)
    const length = (items as unknown[]).length
    if (length > limits.maxItems) throw fatal('ITEM_CAP', `${name} takes at most ${limits.maxItems} items (got ${length})`)
    return copy(items as unknown[])
  }

  /** Runs every item at once; the first fatal error rejects at once, the rest are null or values. */
  const all = (items: unknown[], run: (item: unknown, index: number) => Promise<Step>): Promise<unknown[]> =>
    new Promise((resolve, reject) => {
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

  const parallel = (items: unknown, fn?: unknown): Promise<unknown[]> => {
    healthy()
    const list = checkItems('parallel(items, fn)', items)
    if (fn !== undefined && typeof fn !== 'function') throw fatal('INVALID_ARGUMENT', 'parallel(items, fn): fn is a function')
    if (fn === undefined && !list.every((item) => typeof item === 'function')) {
      throw fatal('INVALID_ARGUMENT', 'parallel(thunks) takes an array of functions; to map items, call parallel(items, fn)')
    }
    const call = fn as ((item: unknown, index: number) => unknown) | undefined
    return all(list, (item, index) => step(() => (call ? call(item, index) : (item as (index: number) => unknown)(index))))
  }

  const pipeline = (items: unknown, ...stages: unknown[]): Promise<unknown[]> => {
    healthy()
    const list = checkItems('pipeline(items, ...stages)', items)
    if (stages.length === 0 || !stages.every((stage) => typeof stage === 'function')) {
      throw fatal('INVALID_ARGUMENT', 'pipeline(items, ...stages) needs at least one stage, each a function (previous, item, index)')
    }
    const calls = stages as ((previous: unknown, item: unknown, index: number) => unknown)[]
    // No barrier between stages: each item moves on as soon as its own stage is done.
    return all(list, async (item, index) => {
      let previous: unknown = item
      for (let i = 0; i < calls.length; i++) {
        const stage = calls[i]
        const outcome = await step(() => stage(previous, item, index))
        if (outcome.kind !== 'value') return outcome
        previous = outcome.value
      }
      return { kind: 'value', value: previous }
    })
  }

  const readText = (address: unknown): Promise<unknown> => {
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
    const size = bytes(stringify(request))
    if (size > limits.maxReadRequestBytes) {
      throw fatal(
        'INVALID_ARGUMENT',
        `readText(address): the address is at most ${limits.maxReadRequestBytes} bytes as JSON (this one is ${size})`,
      )
    }
    return askRead({ type: 'read-text', request })
  }

  let logBytes = 0
  let logCount = 0
  // Not doomed by a fatal error (it starts nothing): a script may report the error it caught.
  const log = (...args: unknown[]): void => {
    const parts: string[] = []
    for (let i = 0; i < args.length; i++) parts.push(typeof args[i] === 'string' ? (args[i] as string) : inspect(args[i], 4))
    const message = parts.join(' ')
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
  const tooDeep = `it nests more than ${limits.maxResultDepth} arrays and objects`
  /** The most arrays and objects nested in JSON text. */
  const nesting = (json: string): number => {
    let depth = 0
    let most = 0
    let quoted = false
    for (let i = 0; i < json.length; i++) {
      const code = json.charCodeAt(i)
      if (quoted) {
        if (code === 0x5c) i++
        else if (code === 0x22) quoted = false
      } else if (code === 0x22) quoted = true
      else if (code === 0x5b || code === 0x7b) {
        depth++
        if (depth > most) most = depth
      } else if (code === 0x5d || code === 0x7d) depth--
    }
    return most
  }
  /** Why `value` would not come back as it is from JSON, or undefined when it would. */
  const unlike = (value: unknown, depth: number, seen: Set<object>): string | undefined => {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined
    if (typeof value === 'number') return Number.isFinite(value) ? undefined : `the number ${value}`
    if (typeof value !== 'object') return `a ${typeof value}`
    if (seen.has(value)) return 'a cycle'
    if (depth >= limits.maxResultDepth) return tooDeep
    seen.add(value)
    const proto = getPrototypeOf(value)
    const array = isArray(value)
    if (!array && proto !== null && proto !== Object.prototype) {
      return `a ${String((value as object).constructor?.name ?? 'class instance')} (only plain objects and arrays)`
    }
    const names: string[] = []
    if (array) for (let i = 0; i < (value as unknown[]).length; i++) names.push(String(i))
    else names.push(...keys(value))
    for (let i = 0; i < names.length; i++) {
      const item = (value as Record<string, unknown>)[names[i]]
      const problem = item === undefined ? 'undefined' : unlike(item, depth + 1, seen)
      if (problem) return `${problem} at ${names[i]}`
    }
    seen.delete(value)
    return undefined
  }
  const failed = (error: unknown) => {
    const cause = doom ?? error
    const described = within(describe(cause), limits.maxErrorBytes)
    send({ type: 'done', stopReason: 'error', error: described, ...(outOfMemory(cause) ? { limit: 'memory' as const } : {}) })
  }
  const completed = (value: unknown) => {
    if (doom) return failed(doom)
    const problem = value === undefined ? undefined : unlike(value, 0, new Set())
    if (problem) return failed(fatal('RESULT_UNSERIALIZABLE', `the return value is not plain JSON: ${problem}`))
    const json = value === undefined ? 'null' : stringify(value)
    const size = bytes(json)
    if (size > limits.maxResultBytes)
      return failed(fatal('RESULT_CAP', `the return value is at most ${limits.maxResultBytes} bytes as JSON (it is ${size})`))
    // What was serialized, checked again: a getter or toJSON may answer the second read differently.
    if (nesting(json) > limits.maxResultDepth)
      return failed(fatal('RESULT_UNSERIALIZABLE', `the return value is not plain JSON: ${tooDeep}`))
    send({ type: 'done', stopReason: 'completed', value: json })
  }
  const settle = (outcome: () => void, cause?: unknown) => {
    try {
      outcome()
    } catch (error) {
      // The script broke what describing its end reads (a getter that throws), or memory ran out.
      hostSend(outOfMemory(cause) || outOfMemory(error) ? OUT_OF_MEMORY : UNDESCRIBABLE)
    }
  }
  function receive(text: string): void {
    settle(() => answer(parse(text) as Reply))
  }

  // The built-ins first: the input is the script's to change, the helpers are frozen on their own.
  lockdown()
  const api = { agent, parallel, pipeline, readText, log }
  for (const name of keys(api)) {
    freeze(api[name as keyof typeof api])
    defineProperty(globalThis, name, { value: api[name as keyof typeof api], writable: true, configurable: true })
  }
  defineProperty(globalThis, 'input', {
    value: start.input === undefined ? undefined : parse(start.input),
    writable: true,
    configurable: true,
  })
  if (typeof body !== 'function') {
    settle(() => failed(body), body)
    return receive
  }
  // Started from a fresh job, not from the host's call into this function.
  void Promise.resolve().then(() =>
    (body as () => Promise<unknown>)().then(
      (value) => settle(() => completed(value)),
      (error) => settle(() => failed(error), error),
    ),
  )
  return receive
}
