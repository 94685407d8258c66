/**
 * A script's parse check before its run is published (quickjs.ts ScriptChecker), off the
 * sidecar's event loop. QuickJS takes time that grows with the square of a script's declarations
 * to compile some scripts (5,000 one-line classes with a private field, 214 KB: 1.3 to 3.5 s
 * measured), and the sidecar's thread serves every terminal: the check runs in a worker thread,
 * one script at a time, each within a time limit past which the worker is ended (and replaced)
 * and the script refused. The worker starts with the first check.
 */
import type { Worker } from 'node:worker_threads'
import { startTsWorker } from '../../local/worker-thread.ts'
import type { EngineFiles } from './quickjs.ts'
import { WORKFLOW_SCRIPT_CHECK_MS } from './tuning.ts'

const WORKER_URL = new URL('./check-worker.ts', import.meta.url)

type Answer = { ready: true } | { problem: string | undefined }

export class ScriptCheck {
  readonly #files: EngineFiles
  readonly #limitMs: number
  #worker: { thread: Worker; ready: Promise<void> } | undefined
  #turn: Promise<unknown> = Promise.resolve()

  constructor(files: EngineFiles, limitMs = WORKFLOW_SCRIPT_CHECK_MS) {
    this.#files = files
    this.#limitMs = limitMs
  }

  /** Why the script does not parse (or cannot be checked), or undefined; never rejects. */
  problem(script: string): Promise<string | undefined> {
    const turn = this.#turn.then(() => this.#check(script))
    this.#turn = turn
    return turn
  }

  /** Ends the worker (a sidecar stopping); a later check starts another. */
  async close(): Promise<void> {
    const worker = this.#worker
    this.#worker = undefined
    await worker?.thread.terminate()
  }

  #start(): { thread: Worker; ready: Promise<void> } {
    const thread = startTsWorker(WORKER_URL)
    thread.unref()
    // An error before ready is the next check's to report (the worker then fails again, and says why).
    const ready = new Promise<void>((resolve, reject) => {
      thread.once('message', () => resolve())
      thread.once('error', reject)
      thread.once('exit', (code) => reject(new Error(`the check worker exited with ${code}`)))
    })
    ready.catch(() => undefined)
    thread.postMessage({ files: this.#files })
    return { thread, ready }
  }

  async #check(script: string): Promise<string | undefined> {
    const worker = (this.#worker ??= this.#start())
    try {
      await worker.ready
    } catch (error) {
      this.#worker = undefined
      return `the script could not be checked: ${(error as Error).message}`
    }
    return new Promise((resolve) => {
      const { thread } = worker
      const end = (problem: string | undefined, failed = false) => {
        clearTimeout(timer)
        thread.off('message', onMessage)
        thread.off('error', onFailure)
        thread.off('exit', onFailure)
        if (failed) {
          if (this.#worker === worker) this.#worker = undefined
          void thread.terminate()
        }
        resolve(problem)
      }
      const onMessage = (answer: Answer) => end('problem' in answer ? answer.problem : undefined)
      const onFailure = (error: unknown) =>
        end(`the script could not be checked: ${error instanceof Error ? error.message : `the check worker exited with ${error}`}`, true)
      const timer = setTimeout(
        () => end(`the script takes too long to parse (over ${this.#limitMs / 1000} s): it is refused`, true),
        this.#limitMs,
      )
      thread.on('message', onMessage)
      thread.once('error', onFailure)
      thread.once('exit', onFailure)
      thread.postMessage({ script })
    })
  }
}
