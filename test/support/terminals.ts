/**
 * Test helpers for the live-terminal routes of a real sidecar process: a session row to own
 * terminals, plain HTTP calls with the secret, and an incremental SSE reader.
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sessions } from '../../storage/tables.ts'
import { openStorage } from '../../storage/client.ts'
import type { RunningSidecar } from './sidecar.ts'

export interface SseMessage {
  event: string
  id?: string
  data: any
}

/** Inserts a session row straight into the sidecar's database (the API normally does this). */
export async function insertSession(databaseUrl: string, id: string, cwd: string): Promise<void> {
  const storage = await openStorage({ url: databaseUrl })
  try {
    await storage.db.insert(sessions).values({ id, cwd }).onConflictDoNothing()
  } finally {
    storage.close()
  }
}

/** A shells file listing real shells plus executable scripts (deterministic "shells" for tests). */
export function shellsFixture(scripts: Record<string, string>): { dir: string; shellsFile: string; path: (name: string) => string } {
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-shells-'))
  const lines = ['/bin/sh', '/bin/bash']
  for (const [name, body] of Object.entries(scripts)) {
    const file = join(dir, name)
    writeFileSync(file, `#!/bin/sh\n${body}\n`)
    chmodSync(file, 0o755)
    lines.push(file)
  }
  const shellsFile = join(dir, 'shells')
  writeFileSync(shellsFile, `# test shells\n${lines.join('\n')}\n`)
  return { dir, shellsFile, path: (name) => join(dir, name) }
}

export class SidecarHttp {
  constructor(readonly sidecar: Pick<RunningSidecar, 'url' | 'secret'>) {}

  fetch(
    method: string,
    path: string,
    init: { json?: unknown; body?: BodyInit; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ) {
    const headers: Record<string, string> = { authorization: `Bearer ${this.sidecar.secret}`, ...init.headers }
    let body = init.body
    if (init.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(init.json)
    }
    return fetch(`${this.sidecar.url}${path}`, { method, headers, body, signal: init.signal })
  }

  async json<T = any>(method: string, path: string, init: Parameters<SidecarHttp['fetch']>[2] = {}): Promise<{ status: number; body: T }> {
    const response = await this.fetch(method, path, init)
    const text = await response.text()
    return { status: response.status, body: text ? JSON.parse(text) : undefined }
  }

  /** Opens an SSE stream; rejects with the typed error body when the server refuses it. */
  async sse(path: string, headers: Record<string, string> = {}): Promise<SseStream> {
    const controller = new AbortController()
    const response = await this.fetch('GET', path, { headers, signal: controller.signal })
    if (!response.ok) {
      const body = await response.json()
      throw Object.assign(new Error(`SSE ${path}: ${response.status} ${body?.error?.code}`), { status: response.status, body })
    }
    return new SseStream(response, controller)
  }
}

export class SseStream {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly #decoder = new TextDecoder()
  #buffer = ''
  #done = false

  constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {
    this.#reader = response.body!.getReader()
  }

  /** The next event (comments skipped), or undefined at the end of the stream. */
  async next(): Promise<SseMessage | undefined> {
    for (;;) {
      const boundary = this.#buffer.indexOf('\n\n')
      if (boundary >= 0) {
        const block = this.#buffer.slice(0, boundary)
        this.#buffer = this.#buffer.slice(boundary + 2)
        const message = parseBlock(block)
        if (message) return message
        continue
      }
      if (this.#done) return undefined
      const { value, done } = await this.#reader.read()
      if (done) this.#done = true
      else this.#buffer += this.#decoder.decode(value, { stream: true })
    }
  }

  /** Reads events until `predicate` holds for one (returned) or the stream ends (throws). */
  async until(predicate: (m: SseMessage) => boolean, seen: SseMessage[] = []): Promise<SseMessage> {
    for (;;) {
      const message = await this.next()
      if (!message) throw new Error(`stream ended before the expected event; saw ${seen.map((m) => m.event).join(',')}`)
      seen.push(message)
      if (predicate(message)) return message
    }
  }

  close(): void {
    this.controller.abort()
    this.#reader.cancel().catch(() => {})
  }
}

function parseBlock(block: string): SseMessage | undefined {
  let event = 'message'
  let id: string | undefined
  const data: string[] = []
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'event') event = value
    else if (field === 'id') id = value
    else if (field === 'data') data.push(value)
  }
  if (data.length === 0) return undefined
  return { event, id, data: JSON.parse(data.join('\n')) }
}

/** Reads /proc/<pid>/status VmRSS in KiB. */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1])
}
