/**
 * The program of a run's script process. That process may read no file but the engine's packages
 * (sidecar/workflows/process.ts), so its program is not loaded as a module: `scriptProgram()`
 * serializes `hostMain` and the guest's functions (guest*.ts) with Function.prototype.toString,
 * and the process evaluates that text. Hence they refer to nothing outside their own bodies.
 *
 * `hostMain` is the host side inside the script process. It loads QuickJS (WebAssembly), makes a
 * runtime with the run's memory, stack and CPU-time limits, evaluates the script API in it as
 * guest code, compiles the script there as the body of an async function, and then only relays
 * strings: the guest's JSON text goes out over the channel (process.ts, channel.ts), the sidecar's
 * replies go in as JSON text, and
 * between them the host runs the guest's pending jobs. No host object is ever handed to the
 * guest but the one bridge function, which takes a string and returns nothing.
 *
 * It ends the script itself (a `done` the sidecar then acts on) when a limit runs out (CPU time:
 * the engine's interrupt handler, which the script cannot catch; memory: an out-of-memory error
 * that ends the script), when the engine's frames overflow the process's own stack (the engine
 * is never entered again after that), and when the script can never go on: no job is pending
 * and nothing it awaits from the host is outstanding.
 */
import type * as QuickJS from 'quickjs-emscripten-core'
import { inspector } from './guest-inspect.ts'
import { lockdown } from './guest-lockdown.ts'
import { guestMain } from './guest.ts'
import type { FromScript, ScriptStart, ToScript } from './protocol.ts'

// tsx compiles with esbuild's keepNames, which wraps functions in a module-level `__name`
// helper that names them; each serialized body gets a stand-in of its own that does the same,
// with the defineProperty of when it is evaluated (a script may replace the global Object).
const serialized = (fn: (...args: never[]) => unknown) =>
  `((__name) => (${String(fn)}))(((define) => (target, value) => define(target, 'name', { value, configurable: true }))(Object.defineProperty))`

/** The source evaluated in the guest: an expression whose value installs the script API. */
export function guestProgram(): string {
  return `'use strict';\n((inspector, lockdown, main) => (hostSend, startText, body) => main(hostSend, startText, body, inspector(), lockdown))(${serialized(inspector)}, ${serialized(lockdown)}, ${serialized(guestMain)})`
}

/** A script process's end of its channel (process.ts's bootstrap makes it). */
export interface Port {
  send(message: unknown): void
  on(listener: (message: ToScript) => void): void
}

/** The text the script process evaluates: an expression whose value is a `(start, port) => void`.
 * `guest` is for a test that shows a leak is found. */
export function scriptProgram(guest = guestProgram()): string {
  return `'use strict';\n((guest, main) => (start, port) => main(start, port, guest))(${JSON.stringify(guest)}, ${serialized(hostMain)})`
}

export async function hostMain(message: ScriptStart & { program?: string }, port: Port, guestSource: string): Promise<void> {
  const send = (out: unknown) => port.send(out)
  let over = false
  const finish = (error: string, limit?: 'cpu-time' | 'memory') => {
    if (over) return
    over = true
    send({ type: 'done', stopReason: 'error', error, ...(limit ? { limit } : {}) })
  }
  process.on('unhandledRejection', () => {})
  process.on('uncaughtException', () => finish('the script process failed outside the script (an uncaught exception)'))
  const { engine, script, input, profiles, defaultProfile, concurrency, limits } = message
  // Through eval: a bundler or test runner rewrites `import(` in this function's own source.
  const load = (0, eval)('(url) => import(url)') as (url: string) => Promise<unknown>
  let quickjs: QuickJS.QuickJSWASMModule
  let wasmMemory: WebAssembly.Memory
  let exhausted = false
  try {
    const core = (await load(engine.core)) as typeof QuickJS
    const base = ((await load(engine.variant)) as { default: QuickJS.QuickJSSyncVariant }).default
    // The memory limit is a memory that cannot grow past it. QuickJS's own limit is not set: in
    // this build it counts allocations rather than bytes (quickjs-emscripten issues 255 and 271)
    // and would end a script holding many small objects before its memory is used.
    const pages = (bytes: number) => Math.ceil(bytes / 65536)
    wasmMemory = new WebAssembly.Memory({ initial: pages(engine.initialBytes), maximum: pages(engine.memoryBytes) })
    // Emscripten grows the memory through this object when its heap is short, trying larger
    // sizes first: only a resize whose every attempt failed leaves `exhausted` set.
    const grow = wasmMemory.grow.bind(wasmMemory)
    wasmMemory.grow = (delta: number) => {
      try {
        const before = grow(delta)
        exhausted = false
        return before
      } catch (error) {
        exhausted = true
        throw error
      }
    }
    quickjs = await core.newQuickJSWASMModuleFromVariant(core.newVariant(base, { wasmMemory }))
  } catch (error) {
    return finish(`the script's engine (QuickJS, WebAssembly) could not load: ${(error as Error).message}`)
  }
  const runtime = quickjs.newRuntime()
  runtime.setMaxStackSize(engine.stackBytes)
  const cpuMs = () => {
    const used = process.cpuUsage()
    return (used.user + used.system) / 1000
  }
  const cpuEnd = cpuMs() + engine.cpuTimeMs
  // Called by the engine every few thousand instructions (regular expressions included); `true`
  // throws an error the script cannot catch, and once over, every later entry ends at once.
  runtime.setInterruptHandler(() => {
    if (!over && cpuMs() > cpuEnd) finish(`the script used its ${engine.cpuTimeMs / 1000} s of CPU time`, 'cpu-time')
    return over
  })
  const vm = runtime.newContext()
  /** Requests the guest sent that the sidecar has not answered yet. */
  const outstanding = new Set<number>()
  const bridge = vm.newFunction('send', (text) => {
    try {
      if (over || vm.typeof(text) !== 'string') return
      const out = JSON.parse(vm.getString(text)) as FromScript
      if (out.type === 'agent' || out.type === 'read-text') outstanding.add(out.call)
      if (out.type === 'done') over = true
      send(out)
    } catch {
      // Not JSON, or the host's own stack ran out: nothing crosses, nothing is thrown back.
    }
  })
  /** Every entry into the engine: a stack overflow of the host's own ends the script for good. */
  const enter = <T>(work: () => T): T | undefined => {
    if (over) return undefined
    try {
      return work()
    } catch (error) {
      finish(
        error instanceof RangeError
          ? 'InternalError: stack overflow (the script nests too deeply)'
          : `the script's engine failed: ${String(error)}`,
      )
      return undefined
    }
  }
  // The engine needed more memory than its limit: a script stuck or failing then holds it all
  // (the guest may not even have had the memory to report its out-of-memory error).
  const stuck = (why: string) =>
    exhausted || wasmMemory.buffer.byteLength >= engine.memoryBytes
      ? finish('InternalError: out of memory (the script holds all of its memory)', 'memory')
      : finish(why)
  const pump = () =>
    enter(() => {
      for (;;) {
        const ran = runtime.executePendingJobs()
        if (ran.error) {
          ran.error.dispose()
          return stuck('the script failed outside its body (an error escaped the script API)')
        }
        if (over || ran.value === 0) break
      }
      if (!over && outstanding.size === 0 && !runtime.hasPendingJob()) {
        stuck('the script can never finish: it awaits something that nothing will settle (no agent() or readText() is pending)')
      }
    })
  const receive = enter(() => {
    const install = vm.unwrapResult(vm.evalCode(guestSource, 'termkeep'))
    const compiled = vm.evalCode(`(async function () {\n${script}\n})`, 'script')
    const body = compiled.error ?? compiled.value
    const startText = vm.newString(JSON.stringify({ input, profiles, defaultProfile, concurrency, limits }))
    const installed = vm.callFunction(install, vm.undefined, bridge, startText, body)
    for (const handle of [install, body, startText]) handle.dispose()
    if (installed.error) {
      installed.error.dispose()
      finish('the script API could not be installed')
      return undefined
    }
    return installed.value
  })
  // The port hands a listener only the lines after the start (process.ts bootstrap).
  port.on((reply: ToScript) => {
    if (over || !receive || reply.type === 'start') return
    outstanding.delete(reply.call)
    enter(() => {
      const text = vm.newString(JSON.stringify(reply))
      const answered = vm.callFunction(receive, vm.undefined, text)
      text.dispose()
      if (answered.error) answered.error.dispose()
      else answered.value.dispose()
    })
    pump()
  })
  pump()
}
