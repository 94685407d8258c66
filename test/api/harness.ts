/**
 * In-process API harness: a migrated file database, the real sidecar process on it (the API asks
 * it to canonicalize paths), `createApp` over both, and helpers to mint tokens and send requests
 * with `app.request()`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hono } from 'hono'
import { createApp } from '../../api/app.ts'
import { createToken } from '../../storage/tokens.ts'
import type { AppDeps, AppEnv } from '../../api/deps.ts'
import { nodeFetch } from '../../api/runtime/node-transport.ts'
import { SidecarClient } from '../../api/sidecar-client.ts'
import type { Grant } from '../../schema/grants.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'

export interface Harness {
  dir: string
  storage: Storage
  sidecar: RunningSidecar
  app: Hono<AppEnv>
  deps: AppDeps
  /** A fresh token's secret. */
  token(grants: readonly Grant[], sessions?: 'all' | readonly string[]): Promise<string>
  request(method: string, path: string, options?: RequestOptions): Promise<Response>
  /** Another app instance over its own connection to the same database. */
  secondApp(): Promise<{ app: Hono<AppEnv>; close(): void }>
  close(): Promise<void>
}

export interface RequestOptions {
  token?: string
  body?: unknown
  headers?: Record<string, string>
  signal?: AbortSignal
}

export const TUNING = { heartbeatMs: 200, registryPollMs: 50 }

export function send(app: Hono<AppEnv>, method: string, path: string, options: RequestOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers)
  if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`)
  let body: BodyInit | undefined
  if (options.body !== undefined) {
    if (typeof options.body === 'string' || options.body instanceof Uint8Array) {
      body = options.body as BodyInit
    } else {
      body = JSON.stringify(options.body)
      if (!headers.has('content-type')) headers.set('content-type', 'application/json')
    }
  }
  return Promise.resolve(app.request(path, { method, headers, body, signal: options.signal }))
}

export interface HarnessOptions {
  databaseUrl?: string
  sidecarEnv?: Record<string, string>
  sidecarNodeArgs?: string[]
  /** The sidecar runs in the harness's directory with the default `./data` and database. */
  defaultLocations?: boolean
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-api-'))
  const databaseUrl = options.defaultLocations
    ? `file:${join(dir, 'data', 'termkeep.db')}`
    : (options.databaseUrl ?? `file:${join(dir, 'termkeep.db')}`)
  const sidecar = await startSidecar({
    ...(options.defaultLocations ? { cwd: dir, defaultLocations: true } : { dataDir: join(dir, 'data'), databaseUrl }), // beside the workspaces: never served
    env: options.sidecarEnv,
    nodeArgs: options.sidecarNodeArgs,
  })
  const storage = await openStorage({ url: databaseUrl })
  await migrate(storage.client)
  const deps: AppDeps = {
    db: storage.db,
    client: storage.client,
    sidecar: new SidecarClient({ url: sidecar.url, secret: sidecar.secret, fetch: nodeFetch }),
    runtime: 'node',
    tuning: TUNING,
  }
  const app = createApp(deps)
  const others: Storage[] = []
  return {
    dir,
    storage,
    sidecar,
    app,
    deps,
    async token(grants, sessions = 'all') {
      return (await createToken(storage.db, { name: 'test', grants, sessions })).secret
    },
    request: (method, path, opts) => send(app, method, path, opts),
    async secondApp() {
      const other = await openStorage({ url: databaseUrl })
      others.push(other)
      const app2 = createApp({ ...deps, db: other.db, client: other.client })
      return { app: app2, close: () => other.close() }
    },
    async close() {
      await sidecar.stop()
      for (const other of others) other.close()
      storage.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Everything the terminal at `terminal` (`/v1/sessions/…/terminals/…`) printed so far, read
 * page by page from its journal, as text. */
export async function outputText(h: Harness, token: string, terminal: string): Promise<string> {
  let text = ''
  for (let after = 0; ; ) {
    const page = (await (await h.request('GET', `${terminal}/output?after=${after}&limit=256`, { token })).json()) as any
    for (const item of page.items) if (item.kind === 'data') text += Buffer.from(item.data, 'base64').toString()
    if (page.items.length === 0 || page.next === after) return text
    after = page.next
  }
}

/** Reads SSE events from a response body until `until` says stop (or the stream ends). */
export async function readEvents(response: Response, until: (events: SseMessage[]) => boolean, timeoutMs = 15_000): Promise<SseMessage[]> {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const events: SseMessage[] = []
  let buffer = ''
  const deadline = setTimeout(() => void reader.cancel(new Error('timeout')), timeoutMs)
  try {
    while (!until(events)) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let at: number
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, at)
        buffer = buffer.slice(at + 2)
        const message = parseBlock(block)
        if (message) events.push(message)
        if (until(events)) break
      }
    }
  } finally {
    clearTimeout(deadline)
    await reader.cancel().catch(() => {})
  }
  return events
}

export interface SseMessage {
  event: string
  id?: string
  data: string
  /** Comment lines (heartbeats) are kept as event ':'. */
}

function parseBlock(block: string): SseMessage | undefined {
  let event = 'message'
  let id: string | undefined
  const data: string[] = []
  let comment = false
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) comment = true
    else if (line.startsWith('event: ')) event = line.slice(7)
    else if (line.startsWith('id: ')) id = line.slice(4)
    else if (line.startsWith('data: ')) data.push(line.slice(6))
  }
  if (data.length === 0 && comment) return { event: ':', data: '' }
  if (data.length === 0) return undefined
  return { event, id, data: data.join('\n') }
}

export function json(message: SseMessage): any {
  return JSON.parse(message.data)
}
