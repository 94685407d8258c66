/**
 * The sidecar's side of observation's /proc thread (proc-worker.ts): typed requests, answered in
 * order. The thread starts on first use, ends after OBSERVE_PROC_IDLE_MS without requests (it
 * costs ~35 MB while it lives, which a sidecar nobody observes should not carry) and never keeps
 * the sidecar alive. A request that gets no answer within OBSERVE_PROC_TIMEOUT_MS (a read stuck on
 * a process's memory) fails with 503, and that thread is left to itself: the next request starts
 * a fresh one.
 */
import type { Worker } from 'node:worker_threads'
import { TermkeepError } from '../../schema/errors.ts'
import { OBSERVE_PROC_IDLE_MS, OBSERVE_PROC_TIMEOUT_MS } from '../tuning.ts'
import { startTsWorker } from '../../local/worker-thread.ts'
import type { Descriptor, ProcStat } from './proc.ts'

export type ProcRequest =
  | { op: 'tree'; shellPid: number }
  | { op: 'details'; pids: number[] }
  | { op: 'environ'; pid: number }
  | { op: 'descriptors'; pids: number[] }

export interface Details {
  argv: string[] | undefined
  cwd: string | undefined
}

const WORKER_URL = new URL('./proc-worker.ts', import.meta.url)

interface Pending {
  resolve(value: unknown): void
  reject(error: unknown): void
  timer: NodeJS.Timeout
}

class ProcReader {
  #worker: Worker | undefined
  #next = 0
  readonly #pending = new Map<number, Pending>()
  #idle: NodeJS.Timeout | undefined

  /** The shell's tree (shell, descendants, session strays) and its foreground leader. */
  tree(shellPid: number): Promise<{ tree: ProcStat[]; foreground: ProcStat | undefined }> {
    return this.#ask({ op: 'tree', shellPid }) as Promise<{ tree: ProcStat[]; foreground: ProcStat | undefined }>
  }

  details(pids: number[]): Promise<Details[]> {
    return this.#ask({ op: 'details', pids }) as Promise<Details[]>
  }

  environ(pid: number): Promise<Record<string, string> | undefined> {
    return this.#ask({ op: 'environ', pid }) as Promise<Record<string, string> | undefined>
  }

  descriptors(pids: number[]): Promise<Descriptor[][]> {
    return this.#ask({ op: 'descriptors', pids }) as Promise<Descriptor[][]>
  }

  #ask(request: ProcRequest): Promise<unknown> {
    clearTimeout(this.#idle)
    const worker = this.#start()
    const id = ++this.#next
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        // Stuck: what is queued behind it fails too, and the next request gets a fresh thread.
        if (this.#worker === worker)
          this.#lose(worker, new TermkeepError('sidecar/unavailable', 'reading the process table did not finish in time'))
      }, OBSERVE_PROC_TIMEOUT_MS)
      this.#pending.set(id, { resolve, reject, timer })
      worker.postMessage({ id, request })
    })
  }

  #start(): Worker {
    if (this.#worker) return this.#worker
    const worker = startTsWorker(WORKER_URL)
    worker.unref()
    worker.on('message', (message: { id: number; result?: unknown; error?: string }) => {
      const pending = this.#pending.get(message.id)
      if (!pending) return
      this.#pending.delete(message.id)
      clearTimeout(pending.timer)
      if (message.error !== undefined) pending.reject(new Error(`the /proc thread failed: ${message.error}`))
      else pending.resolve(message.result)
      if (this.#pending.size === 0) {
        this.#idle = setTimeout(() => this.#pending.size === 0 && this.#lose(worker, new Error('idle')), OBSERVE_PROC_IDLE_MS)
        this.#idle.unref()
      }
    })
    worker.on('error', (error) => this.#lose(worker, error))
    worker.on('exit', (code) => this.#lose(worker, new Error(`the /proc thread exited with ${code}`)))
    this.#worker = worker
    return worker
  }

  #lose(worker: Worker, error: unknown): void {
    if (this.#worker !== worker) return
    this.#worker = undefined
    void worker.terminate().catch(() => {})
    for (const [id, pending] of this.#pending) {
      clearTimeout(pending.timer)
      pending.reject(error)
      this.#pending.delete(id)
    }
  }
}

/** The one reader of this sidecar process. */
export const procReader = new ProcReader()
