/**
 * The program of a run's script process. It runs in a process of its own that can read no file at
 * all (sidecar/workflows/process.ts), so it is not loaded as a module: `scriptProgram()` serializes
 * `hostMain` and the realm's functions (realm.ts) with Function.prototype.toString, and the process
 * evaluates that text. Hence they refer to nothing outside their own bodies.
 *
 * `hostMain` is the host side inside the script process: it makes a fresh `node:vm` context whose
 * global object has no prototype (a plain `{}` would lend the script the host's
 * `Object.prototype.constructor`), evaluates the script API (realm.ts) in it, and only relays
 * strings: the context's JSON text goes out over IPC, the sidecar's replies go in as JSON text.
 * No host object, function, Promise or Error ever reaches the context, so the script's realm is
 * closed: `process`, `require` and the rest of the host are not reachable from it. Every host
 * function here is strict, so a stack-trace `CallSite` shows the script none of them.
 */
import type * as Vm from 'node:vm'
import type { ScriptStart, ToScript } from './protocol.ts'
import { inspectValue, realmMain } from './realm.ts'

// tsx compiles with esbuild's keepNames, which wraps functions in a module-level `__name`
// helper; each serialized body gets a stand-in of its own.
const serialized = (fn: (...args: never[]) => unknown) => `((__name) => (${String(fn)}))((target) => target)`

/** The source evaluated in the context: an expression whose value installs the script API. */
export function realmProgram(): string {
  return `'use strict';\n((inspect, main) => (hostSend, startText) => main(hostSend, startText, inspect))(${serialized(inspectValue)}, ${serialized(realmMain)})`
}

/** The text the script process evaluates: an expression whose value is a `(start) => void`. */
export function scriptProgram(): string {
  return `'use strict';\n((realm, main) => (start) => main(start, realm))(${JSON.stringify(realmProgram())}, ${serialized(hostMain)})`
}

type Install = (hostSend: (text: unknown) => void, startText: string) => (text: string) => void

export function hostMain(message: ScriptStart & { program?: string }, realmSource: string): void {
  const vm = process.getBuiltinModule('node:vm') as typeof Vm
  const start: Record<string, unknown> = { ...message }
  delete start.program
  const send = (out: unknown) => {
    if (process.connected) process.send!(out)
  }
  /** The bridge: a string in, nothing out, nothing thrown. */
  const hostSend = (text: unknown): void => {
    if (typeof text !== 'string') return
    try {
      send(JSON.parse(text))
    } catch {
      // Not JSON: the host would refuse it anyway.
    }
  }
  const context = vm.createContext(Object.create(null) as object)
  const install = vm.runInContext(realmSource, context) as Install
  const receive = install(hostSend, JSON.stringify(start))
  // Registered from inside the `start` message's own listener (process.ts bootstrap), so it sees
  // only the replies after it.
  process.on('message', (reply: ToScript) => {
    try {
      receive(JSON.stringify(reply))
    } catch {
      // Whatever the script made its own realm throw stays there.
    }
  })
  // A floating agent() promise that rejects is the script's business, not a crash; an exception
  // outside the script's body is not inspected (it might be anything).
  process.on('unhandledRejection', () => {})
  process.on('uncaughtException', () =>
    send({ type: 'done', stopReason: 'error', error: 'the script failed outside its body (an uncaught exception)' }),
  )
}
