/**
 * The script engine: QuickJS compiled to WebAssembly (quickjs-emscripten, its release-sync
 * variant). A run's script process loads it to run the script (program.ts); the sidecar loads it
 * too, in a worker thread (check.ts), to parse a script before a run is published, so a script is
 * refused by the same parser that would run it.
 *
 * The script process may read no file but these packages' own directories (process.ts gives it
 * `--allow-fs-read` for exactly them), so where they are is resolved here, once.
 */
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { QuickJSWASMModule } from 'quickjs-emscripten-core'
import { WORKFLOW_SCRIPT_MEMORY_BYTES, WORKFLOW_SCRIPT_STACK_BYTES } from '../../schema/limits.ts'
import { ENGINE_INITIAL_MEMORY_BYTES } from './script-limits.ts'

const CORE = 'quickjs-emscripten-core'
const VARIANT = '@jitl/quickjs-wasmfile-release-sync'
const FFI_TYPES = '@jitl/quickjs-ffi-types'

/** Where the engine is: the ES modules the script process imports, and the directories it may read. */
export interface EngineFiles {
  /** file: URLs of the two entry modules. */
  core: string
  variant: string
  /** Package directories (with a trailing slash, as `--allow-fs-read` takes a directory). */
  readable: string[]
}

/** The package directory holding `file` (the nearest package.json naming `name`). */
function packageDir(name: string, file: string): string {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === name) return dir
  }
  throw new Error(`${name}: no package.json above ${file}`)
}

/** Resolves the engine's packages as installed (throws when one is missing). */
export function engineFiles(): EngineFiles {
  const core = import.meta.resolve(CORE)
  const variant = import.meta.resolve(VARIANT)
  const coreDir = packageDir(CORE, fileURLToPath(core))
  const ffiTypes = createRequire(join(coreDir, 'package.json')).resolve(FFI_TYPES)
  const dirs = [coreDir, packageDir(VARIANT, fileURLToPath(variant)), packageDir(FFI_TYPES, ffiTypes)]
  return { core, variant, readable: dirs.map((dir) => `${dir}/`) }
}

/** Loads (compiles and instantiates) the engine's WebAssembly module, in a memory that cannot
 * grow past WORKFLOW_SCRIPT_MEMORY_BYTES (as in a script process: program.ts). */
export async function loadQuickJS(files: EngineFiles): Promise<QuickJSWASMModule> {
  const { newQuickJSWASMModuleFromVariant, newVariant } = (await import(files.core)) as typeof import('quickjs-emscripten-core')
  const base = ((await import(files.variant)) as { default: Parameters<typeof newQuickJSWASMModuleFromVariant>[0] }).default
  const wasmMemory = new WebAssembly.Memory({ initial: ENGINE_INITIAL_MEMORY_BYTES / 65536, maximum: WORKFLOW_SCRIPT_MEMORY_BYTES / 65536 })
  return newQuickJSWASMModuleFromVariant(newVariant(base as never, { wasmMemory }))
}

/** The script's body becomes this function (program.ts has the same text: it imports nothing):
 * its line 1 is the file's line 2. */
export const wrapScript = (script: string) => `(async function () {\n${script}\n})`

const AsyncFunction = (async () => {}).constructor as new (body: string) => unknown

/**
 * Why a script does not parse, or undefined when it does. QuickJS parses it as the script process
 * will (its message, line and column); V8 then checks that it is one function body (QuickJS's
 * Function constructor pastes the body into source text, so a body that closes its function and
 * opens another would parse there too). A script nested so deep that parsing it overflows the
 * host's own stack leaves that QuickJS instance unusable: it is replaced.
 */
export class ScriptChecker {
  readonly #files: EngineFiles
  #quickjs: Promise<QuickJSWASMModule>

  constructor(files: EngineFiles, loaded: QuickJSWASMModule) {
    this.#files = files
    this.#quickjs = Promise.resolve(loaded)
  }

  async problem(script: string): Promise<string | undefined> {
    const quickjs = await this.#quickjs
    let found: string | undefined
    try {
      found = quickjsProblem(quickjs, script)
    } catch (error) {
      if (!(error instanceof RangeError)) throw error
      this.#quickjs = loadQuickJS(this.#files)
      return 'the script does not parse: it nests too deeply'
    }
    return found ?? v8Problem(script)
  }
}

function quickjsProblem(quickjs: QuickJSWASMModule, script: string): string | undefined {
  const runtime = quickjs.newRuntime()
  try {
    runtime.setMaxStackSize(WORKFLOW_SCRIPT_STACK_BYTES)
    const context = runtime.newContext()
    try {
      const compiled = context.evalCode(wrapScript(script), 'script', { compileOnly: true })
      if (!compiled.error) {
        compiled.value.dispose()
        return undefined
      }
      const { message, stack } = context.dump(compiled.error) as { message?: unknown; stack?: unknown }
      compiled.error.dispose()
      // "at script:L:C", L counting the wrapper's first line.
      const at = /\bscript:(\d+):(\d+)/.exec(String(stack))
      return `the script does not parse: ${String(message)}${at ? where(script, Number(at[1]) - 1, Number(at[2])) : ''}`
    } finally {
      context.dispose()
    }
  } finally {
    runtime.dispose()
  }
}

/** Pure: " (line L, column C)" of the script's own text, or that the end was reached. */
export function where(script: string, line: number, column: number): string {
  if (!(line > 0)) return ''
  if (line > script.split('\n').length) return ' (at the end of the script)'
  return column > 0 ? ` (line ${line}, column ${column})` : ` (line ${line})`
}

function v8Problem(script: string): string | undefined {
  try {
    // Compiles the body alone (V8 parses a Function constructor's body on its own); nothing runs.
    new AsyncFunction(script)
    return undefined
  } catch (error) {
    if (error instanceof RangeError) return 'the script does not parse: it nests too deeply'
    if (!(error instanceof SyntaxError)) throw error
    return `the script does not parse as the body of one function: ${error.message}`
  }
}
