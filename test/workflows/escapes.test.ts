/**
 * The corpus of escapes: scripts that try to reach something beyond the documented script API,
 * each run in a real script process (ScriptProcess, the path a run takes; script-process.ts
 * stands in for the sidecar's side of the IPC) in both modes a sidecar runs them: in namespaces
 * of its own and without (TERMKEEP_WORKFLOW_NAMESPACES=off). docs/security.md reports its size
 * and result.
 *
 * Every entry hands what it reached to `verdict()` (PRELUDE), which walks everything reachable
 * from it (own properties, accessors, prototypes) and reports
 * - every function that is neither a built-in of the engine (nor one of the five documented
 *   helpers, all walked at the script's start), nor the script's own, nor a promise's resolving
 *   function: the host's bridge or one of the script API's own closures would be one;
 * - what `return typeof process` (and require, …) gives through every Function constructor found;
 * and each entry checks what it observed. The last test shows the verdict does find a leak.
 */
import { describe, expect, it } from 'vitest'
import { guestProgram, scriptProgram } from '../../sidecar/workflows/program.ts'
import { runInProcess, SANDBOXES, type ScriptOutcome, startOf } from './script-process.ts'

/** The ECMAScript globals QuickJS defines, SharedArrayBuffer removed (guest-lockdown.ts). */
const STANDARD_GLOBALS = [
  ...['AggregateError', 'Array', 'ArrayBuffer', 'BigInt', 'BigInt64Array', 'BigUint64Array', 'Boolean', 'DataView', 'Date'],
  ...['Error', 'EvalError', 'FinalizationRegistry', 'Float16Array', 'Float32Array', 'Float64Array', 'Function', 'Infinity'],
  ...['Int16Array', 'Int32Array', 'Int8Array', 'InternalError', 'Iterator', 'JSON', 'Map', 'Math', 'NaN', 'Number', 'Object'],
  ...['Promise', 'Proxy', 'RangeError', 'ReferenceError', 'Reflect', 'RegExp', 'Set', 'String', 'Symbol', 'SyntaxError'],
  ...['TypeError', 'URIError', 'Uint16Array', 'Uint32Array', 'Uint8Array', 'Uint8ClampedArray', 'WeakMap', 'WeakRef'],
  ...['WeakSet', 'decodeURI', 'decodeURIComponent', 'encodeURI', 'encodeURIComponent', 'escape', 'eval', 'globalThis'],
  ...['isFinite', 'isNaN', 'parseFloat', 'parseInt', 'undefined', 'unescape'],
]

/** In the script: what it reached, checked (the corpus's one judge). */
const PRELUDE = `
const reached = []
const observed = {}
let judging = false
const DOCUMENTED = ['agent', 'parallel', 'pipeline', 'readText', 'log', 'input']
const HOST_NAMES = ['process', 'require', 'module', 'Buffer', 'std', 'os', 'Deno', 'Bun', 'WebAssembly', 'fetch',
  'setTimeout', 'queueMicrotask', 'console', 'SharedArrayBuffer', 'Atomics', 'importScripts', 'XMLHttpRequest']
const { getPrototypeOf, getOwnPropertyDescriptor, getOwnPropertyNames } = Object
const { ownKeys } = Reflect
const fnSource = Function.prototype.toString
const isNative = (f) => fnSource.call(f).includes('[native code]')
const walk = (roots, visit) => {
  const seen = new Set()
  const pending = [...roots]
  while (pending.length > 0) {
    const value = pending.pop()
    if ((typeof value !== 'object' && typeof value !== 'function') || value === null || seen.has(value)) continue
    seen.add(value)
    visit(value)
    try {
      pending.push(getPrototypeOf(value), value.constructor)
      for (const key of ownKeys(value)) {
        const found = getOwnPropertyDescriptor(value, key)
        if (found) pending.push(found.value, found.get, found.set)
      }
    } catch {}
  }
  return seen
}
// The engine's built-ins (the standard globals, and those only the values a script makes lead to)
// and the documented helpers, as the script finds them at its start.
const STANDARD = ${JSON.stringify(STANDARD_GLOBALS)}
const HIDDEN = [(async () => {}).constructor, (function* () {}).constructor, (async function* () {}).constructor,
  [][Symbol.iterator](), new Map()[Symbol.iterator](), new Set()[Symbol.iterator](), ''[Symbol.iterator](),
  /x/[Symbol.matchAll](''), [1].values().map((x) => x), Iterator.from({ next: () => ({ done: true }) }), Iterator.concat([]),
  Object.getOwnPropertyDescriptor((function () { 'use strict'; return arguments })(), 'callee').get]
const intrinsic = walk([...STANDARD.filter((n) => n !== 'globalThis').map((n) => globalThis[n]), ...HIDDEN,
  agent, parallel, pipeline, readText, log], () => {})
const verdict = (values) => {
  judging = true
  try {
    const foreign = []
    const via = new Set()
    walk(values, (value) => {
      if (typeof value !== 'function') return
      if (intrinsic.has(value)) {
        if (/Function$/.test(value.name) && isNative(value)) {
          const made = value('return [' + HOST_NAMES.map((n) => 'typeof ' + n).join(', ') + '].join()')()
          // A generator function's body runs on next(); an async one's is checked by its own entry.
          if (typeof made === 'string') via.add(made)
          else if (typeof made?.next === 'function' && !(made instanceof Promise) && value.name === 'GeneratorFunction') via.add(made.next().value)
        }
        return
      }
      const file = value.fileName
      if (file === 'script' || file === '<input>') return
      if (isNative(value) && value.name === '') return
      foreign.push((isNative(value) ? 'native ' : file + ' ') + value.name)
    })
    return { foreign, via: [...via] }
  } finally {
    judging = false
  }
}
const report = () => ({ observed, ...verdict(reached), global: HOST_NAMES.map((n) => typeof globalThis[n]).join() })
/** A recorder for traps and getters: what they are handed is judged, then logged. */
const judgeArgs = (...values) => { if (!judging) log('judged ' + JSON.stringify(verdict(values))) }
const attempt = (fn) => { try { return fn() } catch (error) { return error.name } }
`

const NOTHING = Array(17).fill('undefined').join()
/** What a trap or getter logs when it was handed nothing foreign. */
const JUDGED_CLEAN = `judged ${JSON.stringify({ foreign: [], via: [NOTHING] })}`

interface Entry {
  name: string
  script: string
  /** Checks on the outcome beyond "nothing foreign, no host global through any constructor". */
  check?: (report: any, outcome: ScriptOutcome) => void
  /** The run does not return report(): its traps and getters log their verdicts instead. */
  logsOnly?: boolean
  /** Run as it is, without the PRELUDE (its lines and columns are the script's own). */
  bare?: boolean
}

const ENTRIES: Entry[] = [
  {
    name: "the issue's escape, verbatim: the engine's Function has no `process` to return",
    script: "try { await import('node:fs') } catch (e) { return typeof e.constructor.constructor('return process')() }",
    logsOnly: true,
    bare: true,
    check: (_, outcome) =>
      expect(outcome.done).toEqual({
        type: 'done',
        stopReason: 'error',
        error: "ReferenceError: 'process' is not defined (line 1, column 102)",
      }),
  },
  {
    name: "the issue's escape, walked: a failed import()'s error and every constructor from it",
    script: `
      try { await import('node:fs') } catch (e) {
        reached.push(e, e.constructor, e.constructor.constructor)
        observed.process = attempt(() => e.constructor.constructor('return process')())
        observed.typeof = e.constructor.constructor('return typeof process')()
      }
      return report()`,
    check: (r) => expect(r.observed).toEqual({ process: 'ReferenceError', typeof: 'undefined' }),
  },
  {
    name: 'import() of anything, and require',
    script: `
      for (const name of ['node:child_process', 'fs', 'data:text/javascript,export default 1', '/etc/passwd', 'termkeep']) {
        try { await import(name); observed[name] = 'loaded' } catch (e) { reached.push(e); observed[name] = e.name + ': ' + e.message }
      }
      observed.require = typeof require
      return report()`,
    check: (r) => {
      expect(Object.values(r.observed).filter((v) => v === 'loaded')).toEqual([])
      expect(r.observed.require).toBe('undefined')
    },
  },
  {
    name: 'constructor walks from every helper and `this`',
    script: `
      for (const v of [agent, parallel, pipeline, readText, log, this, globalThis]) {
        reached.push(v, v.constructor, v.constructor.constructor, getPrototypeOf(v), v.__proto__)
        observed[typeof v + reached.length] = typeof v.constructor.constructor('return this')().process
      }
      return report()`,
    check: (r) => expect(new Set(Object.values(r.observed))).toEqual(new Set(['undefined'])),
  },
  {
    name: "constructor walks from agent()'s promise and result",
    script: `
      const promise = agent('one')
      const result = await promise
      reached.push(promise, promise.constructor, promise.then, result, result.constructor, promise.constructor.constructor)
      observed.text = result.text
      observed.process = promise.constructor.constructor('return typeof process')()
      return report()`,
    check: (r) => expect(r.observed).toEqual({ text: 'did one', process: 'undefined' }),
  },
  {
    name: 'constructor walks from the arrays parallel() and pipeline() resolve with',
    script: `
      const mapped = await parallel([1, 2], (n) => agent('n' + n))
      const piped = await pipeline(['a'], (x) => x + 1, (x) => agent(x))
      reached.push(mapped, piped, mapped.constructor, piped.map, mapped.constructor.constructor)
      observed.values = [mapped, piped]
      return report()`,
    check: (r) => expect(r.observed.values).toEqual([['did n1', 'did n2'], ['did a1']]),
  },
  {
    name: 'constructor walks from errors: a failed readText(), a fatal WorkflowError',
    script: `
      try { await readText('missing.txt') } catch (e) { reached.push(e, e.constructor, e.constructor.constructor); observed.plain = [e.code, e.fatal ?? null] }
      try { agent(42) } catch (e) { reached.push(e, e.constructor, getPrototypeOf(e)); observed.fatal = [e.name, e.code, e.fatal] }
      log(JSON.stringify(report()))
      return 'doomed: the run ends with the fatal error'`,
    logsOnly: true,
    check: (_, outcome) => {
      const report = JSON.parse(outcome.logs[0])
      expect(report).toMatchObject({ foreign: [], via: [NOTHING], global: NOTHING })
      expect(report.observed).toEqual({ plain: ['files/not-found', null], fatal: ['WorkflowError', 'INVALID_ARGUMENT', true] })
      expect(outcome.done).toMatchObject({ stopReason: 'error', error: expect.stringMatching(/^INVALID_ARGUMENT/) })
    },
  },
  {
    name: 'Error.prepareStackTrace and captureStackTrace: no CallSites, no host frames',
    script: `
      observed.set = attempt(() => { 'use strict'; Error.prepareStackTrace = (e, sites) => sites })
      const stack = new Error('x').stack
      observed.stack = [typeof stack, typeof Error.prepareStackTrace, typeof Error.captureStackTrace]
      let deep
      await agent('x').then(() => { deep = new Error('in a reaction').stack })
      observed.frames = (stack + deep).split('\\n').filter((line) => line.trim() && !/\\((script|termkeep):\\d+:\\d+\\)|at script:/.test(line))
      return report()`,
    check: (r) => expect(r.observed).toEqual({ set: 'TypeError', stack: ['string', 'undefined', 'undefined'], frames: [] }),
  },
  {
    name: 'a Proxy returned as the run value: its traps are handed only its own target',
    script: `
      const traps = {
        get: (target, key, receiver) => { judgeArgs(target, receiver); return Reflect.get(target, key) },
        ownKeys: (target) => { judgeArgs(target); return Reflect.ownKeys(target) },
        getOwnPropertyDescriptor: (target, key) => { judgeArgs(target); return Reflect.getOwnPropertyDescriptor(target, key) },
        getPrototypeOf: (target) => { judgeArgs(target); return Object.prototype },
      }
      return new Proxy({ a: 1 }, traps)`,
    logsOnly: true,
    check: (_, outcome) => {
      expect(outcome.logs.length).toBeGreaterThan(0)
      expect(new Set(outcome.logs)).toEqual(new Set([JUDGED_CLEAN]))
      expect(outcome.done).toEqual({ type: 'done', stopReason: 'completed', value: '{"a":1}' })
    },
  },
  {
    name: 'getters on the run value, on agent() options and on a thrown value',
    script: `
      const looked = []
      const options = { get label() { judgeArgs(this); looked.push('label'); return 'x' } }
      await agent('p', options)
      if (input.throw) throw { get name() { judgeArgs(this); return 'Trap' }, get message() { judgeArgs(this); return 'thrown' }, get stack() { judgeArgs(this); return '' } }
      return { get value() { judgeArgs(this); return looked } }`,
    logsOnly: true,
    check: (_, outcome) => {
      expect(outcome.logs.length).toBeGreaterThan(1)
      expect(new Set(outcome.logs)).toEqual(new Set([JUDGED_CLEAN]))
      expect(outcome.done).toEqual({ type: 'done', stopReason: 'completed', value: '{"value":["label"]}' })
    },
  },
  {
    name: 'a Proxy passed as agent() options and as readText() address',
    script: `
      const spy = (target) => new Proxy(target, {
        get: (t, k, r) => { judgeArgs(t, r); return Reflect.get(t, k) },
        ownKeys: (t) => { judgeArgs(t); return Reflect.ownKeys(t) },
        getOwnPropertyDescriptor: (t, k) => { judgeArgs(t); return Reflect.getOwnPropertyDescriptor(t, k) },
        has: (t, k) => { judgeArgs(t); return Reflect.has(t, k) },
      })
      const result = await agent('p', spy({ label: 'proxied' }))
      try { await readText(spy({ address: 'x.txt', limit: 1 })) } catch (e) { observed.read = e.code }
      try { await parallel(spy([1, 2]), (n) => n) } catch (e) { observed.parallel = e.code }
      observed.text = result.text
      return report()`,
    check: (r, outcome) => {
      expect(r.observed).toEqual({ read: 'files/not-found', text: 'did p' })
      expect(new Set(outcome.logs)).toEqual(new Set([JUDGED_CLEAN]))
      expect(outcome.messages.find((m) => m.type === 'agent')).toMatchObject({ label: 'proxied' })
    },
  },
  {
    name: 'a Proxy thrown: the description reads it, its traps get nothing of the API',
    script: `
      const traps = {
        get: (t, k, r) => { judgeArgs(t, r); return Reflect.get(t, k) },
        has: (t, k) => { judgeArgs(t); return Reflect.has(t, k) },
        getPrototypeOf: (t) => { judgeArgs(t); return Reflect.getPrototypeOf(t) },
      }
      throw new Proxy(new RangeError('through a proxy'), traps)`,
    logsOnly: true,
    check: (_, outcome) => {
      expect(outcome.logs.length).toBeGreaterThan(0)
      expect(new Set(outcome.logs)).toEqual(new Set([JUDGED_CLEAN]))
      expect(outcome.done).toMatchObject({ stopReason: 'error', error: expect.stringMatching(/^RangeError: through a proxy/) })
    },
  },
  {
    name: 'thenables: resolving functions handed to a then() are the engine’s own',
    script: `
      const thenable = { then(resolve, reject) { reached.push(resolve, reject, this); resolve('from a thenable') } }
      observed.item = await parallel([1], () => thenable)
      observed.stage = await pipeline([1], () => thenable, (v) => v + '!')
      observed.awaited = await thenable
      return report()`,
    check: (r) => expect(r.observed).toEqual({ item: ['from a thenable'], stage: ['from a thenable!'], awaited: 'from a thenable' }),
  },
  {
    name: 'Promise tricks: then, species and constructor of the helpers’ promises cannot be changed',
    script: `
      const p = agent('x')
      observed.then = attempt(() => { 'use strict'; Promise.prototype.then = function () { reached.push(this) } })
      observed.thenGetter = attempt(() => Object.defineProperty(Object.prototype, 'then', { get() { reached.push(this) } }))
      observed.species = attempt(() => Object.defineProperty(Promise, Symbol.species, { get() { return function () {} } }))
      observed.own = attempt(() => { p.then = (ok) => ok('forged'); return 'assigned' })
      class Mine extends Promise { static get [Symbol.species]() { return Promise } }
      observed.subclass = await parallel([1], () => Mine.resolve(agent('y')))
      observed.result = (await p).text
      return report()`,
    check: (r) =>
      expect(r.observed).toEqual({
        then: 'TypeError',
        thenGetter: 'TypeError',
        species: 'TypeError',
        own: 'assigned',
        subclass: ['did y'],
        result: 'did x',
      }),
  },
  {
    name: 'eval and Function make code of the script, in the engine',
    script: `
      observed.eval = eval('typeof process + typeof require')
      observed.indirect = (0, eval)('this') === globalThis
      observed.fn = Function('return typeof process')()
      observed.async = await (async () => {}).constructor('return typeof require')()
      reached.push(eval, Function, (0, eval)('(function* () {})').constructor)
      return report()`,
    check: (r) => expect(r.observed).toEqual({ eval: 'undefinedundefined', indirect: true, fn: 'undefined', async: 'undefined' }),
  },
  {
    name: 'SharedArrayBuffer, Atomics, WebAssembly and timers do not exist',
    script: `
      observed.types = [typeof SharedArrayBuffer, typeof Atomics, typeof WebAssembly, typeof setTimeout, typeof setInterval]
      observed.viaBuffer = attempt(() => new ArrayBuffer(8, { maxByteLength: 16 }).constructor.name)
      return report()`,
    check: (r) => expect(r.observed).toEqual({ types: Array(5).fill('undefined'), viaBuffer: 'ArrayBuffer' }),
  },
  {
    name: 'globalThis holds the documented names beside the ECMAScript built-ins, nothing else',
    script: `
      observed.names = Object.getOwnPropertyNames(globalThis).sort()
      observed.symbols = Object.getOwnPropertySymbols(globalThis).map(String)
      observed.prototypes = []
      for (let p = getPrototypeOf(globalThis); p; p = getPrototypeOf(p)) observed.prototypes.push(p === Object.prototype)
      reached.push(globalThis)
      return report()`,
    check: (r) => {
      expect(r.observed.names).toEqual([...STANDARD_GLOBALS, 'agent', 'input', 'log', 'parallel', 'pipeline', 'readText'].sort())
      expect(r.observed.symbols).toEqual(['Symbol(Symbol.toStringTag)'])
      expect(r.observed.prototypes).toEqual([true])
    },
  },
  {
    name: 'caller, callee and arguments lead nowhere',
    script: `
      observed.caller = [attempt(() => agent.caller), attempt(() => log.arguments), attempt(() => Function.prototype.caller)]
      reached.push((function () { return arguments.callee.caller })())
      await parallel([1], function () { reached.push(attempt(() => arguments.callee.caller), arguments.callee) })
      await pipeline([1], function (previous) { reached.push(attempt(() => arguments.callee.caller)); return previous })
      return report()`,
    check: (r) => expect(r.observed).toEqual({ caller: ['TypeError', 'TypeError', 'TypeError'] }),
  },
  {
    name: 'prototype pollution aimed at the bridge: built-ins are frozen, replaced globals do not reach the API',
    script: `
      const calls = []
      const spy = (name) => function (...args) { calls.push(name); reached.push(this, ...args); return undefined }
      const targets = [
        [Object.prototype, 'toJSON'], [Array.prototype, 'toJSON'], [Array.prototype, 'push'], [Array.prototype, 'map'],
        [Array.prototype, 'includes'], [Array.prototype, 'join'], [Array.prototype, Symbol.iterator], [Function.prototype, 'call'],
        [Function.prototype, 'apply'], [Map.prototype, 'get'], [Map.prototype, 'set'], [WeakSet.prototype, 'has'],
        [WeakSet.prototype, 'add'], [Promise.prototype, 'then'], [String.prototype, 'split'], [JSON, 'stringify'], [JSON, 'parse'],
        [Object, 'keys'], [Object, 'defineProperty'], [Reflect, 'apply'],
      ]
      observed.changed = targets.filter(([target, key]) => attempt(() => { 'use strict'; target[key] = spy(String(key)) }) !== 'TypeError').map(([, k]) => String(k))
      globalThis.JSON = { stringify: spy('global JSON.stringify'), parse: spy('global JSON.parse') }
      globalThis.Object = spy('global Object')
      globalThis.Promise = spy('global Promise')
      const result = await agent('after pollution', { label: 'still' })
      const items = await parallel([1, 2], (n) => n * 2)
      try { await readText('x.txt') } catch (e) { observed.read = e.code }
      log('logged', { ok: true })
      observed.works = [result.text, items]
      observed.calls = calls
      return report()`,
    check: (r, outcome) => {
      expect(r.observed).toEqual({ changed: [], read: 'files/not-found', works: ['did after pollution', [2, 4]], calls: [] })
      expect(outcome.logs).toEqual(['logged { ok: true }'])
    },
  },
  {
    name: "every built-in prototype the values a script makes lead to is frozen, Iterator.concat's too",
    script: `
      const made = [Iterator.concat([1]), [1].values().map((x) => x), Iterator.from({ next() { return { done: true } } }),
        (function* () {})(), (async function* () {})(), 'a'.matchAll(/a/g), new Map().entries(), new Set().values(),
        ''[Symbol.iterator](), [].keys(), Promise.resolve(), new WeakRef({}), new FinalizationRegistry(() => {}),
        new DataView(new ArrayBuffer(1)), new Float16Array(1), Object(1n), Object(Symbol()), new Date(), /x/,
        (function () { return arguments })(), new AggregateError([]), Proxy.revocable({}, {}), new WeakMap(),
        async () => {}, function* () {}, async function* () {}]
      // A generator's own prototype is its function's \`prototype\`: the script's, not a built-in.
      const own = new Set([made[3], made[4]].map((generator) => getPrototypeOf(generator)))
      const seen = new Set()
      observed.unfrozen = []
      for (const value of made)
        for (let proto = getPrototypeOf(value); proto !== null && !seen.has(proto); proto = getPrototypeOf(proto)) {
          seen.add(proto)
          if (!own.has(proto) && !Object.isFrozen(proto)) observed.unfrozen.push(Object.prototype.toString.call(proto))
        }
      reached.push(...made)
      return report()`,
    check: (r) => expect(r.observed).toEqual({ unfrozen: [] }),
  },
  {
    name: 'a script that replaces its own globals still ends through the API (the host re-checks)',
    script: `
      globalThis.agent = () => 'forged'
      globalThis.log = () => {}
      reached.push(agent, log)
      return report()`,
  },
  {
    name: 'a recursion without end is an error the script can catch',
    script: `
      const deep = () => deep()
      observed.recursion = attempt(() => deep())
      return report()`,
    check: (r) => expect(r.observed).toEqual({ recursion: 'InternalError' }),
  },
  {
    name: "a structure so deep the engine's frames overflow the process's own stack ends the script, not the process",
    script: `
      let nested = {}
      for (let i = 0; i < 100000; i++) nested = { nested }
      try { JSON.stringify(nested) } catch (e) { reached.push(e) }
      return report()`,
    logsOnly: true,
    check: (_, outcome) =>
      expect(outcome.done).toEqual({
        type: 'done',
        stopReason: 'error',
        error: 'InternalError: stack overflow (the script nests too deeply)',
      }),
  },
]

function reportOf(outcome: ScriptOutcome): any {
  expect(outcome.done.stopReason, outcome.done.error).toBe('completed')
  return JSON.parse(outcome.done.value!)
}

for (const mode of ['namespaced', 'fallback'] as const) {
  describe(`the escape corpus (${mode})`, () => {
    for (const entry of ENTRIES) {
      it.concurrent(entry.name, async () => {
        const outcome = await runInProcess(SANDBOXES[mode], startOf(entry.bare ? entry.script : PRELUDE + entry.script, { throw: false }))
        if (entry.logsOnly) return entry.check?.(undefined, outcome)
        const report = reportOf(outcome)
        expect(report.foreign).toEqual([])
        // Every Function constructor reached makes code without them.
        expect(report.via.filter((found: string) => found !== NOTHING)).toEqual([])
        expect(report.global).toBe(NOTHING)
        entry.check?.(report, outcome)
      })
    }
  })
}

describe('the judge', () => {
  it('finds a leak: the bridge and an API closure handed to the script are foreign', async () => {
    const leaky = guestProgram().replace('lockdown();', 'lockdown(); globalThis.leaked = [hostSend, ask];')
    expect(leaky).not.toBe(guestProgram())
    const outcome = await runInProcess(
      SANDBOXES.fallback,
      startOf(`${PRELUDE}reached.push(...globalThis.leaked); return report()`),
      scriptProgram(leaky),
    )
    expect(reportOf(outcome).foreign.sort()).toEqual(['native send', 'termkeep ask'])
  })
})
