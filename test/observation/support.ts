/**
 * The observation tests' stack: the real sidecar and Node API (test/browser/stack.ts), a session,
 * terminals typed into through a controlling follow, an observer token minted over the API, and
 * the fake agent (test/fixtures/fake-observed-agent.mjs) started in a terminal with its own HOME.
 */
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { journalText, startStack, type Stack } from '../browser/stack.ts'
import { waitFor } from '../support/ports.ts'

export const AGENT = fileURLToPath(new URL('../fixtures/fake-observed-agent.mjs', import.meta.url))

export interface Answer {
  status: number
  body: any
}

export interface SseEvent {
  event: string
  /** The event's id (a resume cursor), when it has one. */
  id?: string
  data: any
}

export class Observation {
  readonly #streams: AbortController[] = []

  private constructor(
    readonly stack: Stack,
    readonly sid: string,
  ) {}

  static async start(name: string, sidecarEnv: Record<string, string> = {}, dataDir?: string): Promise<Observation> {
    const stack = await startStack(name, { sidecarEnv, dataDir })
    const sid = `obs-${name}`
    const self = new Observation(stack, sid)
    const created = await self.call('POST', '/v1/sessions', { json: { id: sid, cwd: stack.workspaceDir } })
    if (created.status !== 201 && created.status !== 200) throw new Error(`session: ${JSON.stringify(created.body)}`)
    return self
  }

  async call(method: string, path: string, init: { token?: string; json?: unknown; body?: string } = {}): Promise<Answer> {
    const headers: Record<string, string> = { authorization: `Bearer ${init.token ?? this.stack.token}` }
    let body = init.body
    if (init.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(init.json)
    } else if (body !== undefined) headers['content-type'] = 'application/json'
    const response = await fetch(`${this.stack.api.url}${path}`, { method, headers, body })
    const text = await response.text()
    return { status: response.status, body: text ? JSON.parse(text) : undefined }
  }

  /** An observer token over the API, bound to this session. */
  async observer(grants: string[], observeEnvironment: string[] = []): Promise<string> {
    const made = await this.call('POST', '/v1/tokens', { json: { name: 'observer', grants, sessions: [this.sid], observeEnvironment } })
    if (made.status !== 201) throw new Error(`token: ${JSON.stringify(made.body)}`)
    return made.body.secret
  }

  terminalPath(tid: string, sid = this.sid): string {
    return `/v1/sessions/${sid}/terminals/${tid}`
  }

  /** Creates a terminal and holds a follow on it, so input can be sent as its controller. */
  async terminal(tid: string, sid = this.sid): Promise<void> {
    const created = await this.call('PUT', this.terminalPath(tid, sid), { json: { cols: 120, rows: 30 } })
    if (created.status !== 201) throw new Error(`terminal: ${JSON.stringify(created.body)}`)
    const stream = await this.stream(`${this.terminalPath(tid, sid)}/follow?attachment=ctl-${tid}`)
    void stream.drain()
  }

  async type(tid: string, text: string, sid = this.sid): Promise<void> {
    const response = await fetch(`${this.stack.api.url}${this.terminalPath(tid, sid)}/input`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${this.stack.token}`,
        'termkeep-attachment': `ctl-${tid}`,
        'content-type': 'application/octet-stream',
      },
      body: text,
    })
    if (response.status !== 204) throw new Error(`input: ${response.status} ${await response.text()}`)
  }

  /** POST …/observation/<group>/<operation>. */
  observe(tid: string, path: string, token: string, json: unknown, sid = this.sid): Promise<Answer> {
    return this.call('POST', `${this.terminalPath(tid, sid)}/observation/${path}`, { token, json })
  }

  context(tid: string, token: string): Promise<Answer> {
    return this.call('GET', `${this.terminalPath(tid)}/observation`, { token })
  }

  async foreground(tid: string, token: string, name: string): Promise<any> {
    return waitFor(
      async () => {
        const answer = await this.context(tid, token)
        return answer.status === 200 && answer.body.foreground.executableName === name && answer.body
      },
      20_000,
      `${name} in the foreground of ${tid}`,
    )
  }

  /** Starts the fake agent in `tid` with HOME = a fresh directory (or `extra.home`); resolves with
   * that HOME. */
  async startAgent(tid: string, token: string, id: string, extra: { env?: string; args?: string; home?: string } = {}): Promise<string> {
    const home = extra.home ?? realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-agent-home-')))
    mkdirSync(join(home, '.fakeagent'), { recursive: true })
    const env = `HOME=${home} FAKEAGENT_DATA=${home}/.fakeagent ${extra.env ?? ''}`
    await this.type(tid, `cd ${home} && ${env} ${process.execPath} ${AGENT} --id ${id} ${extra.args ?? ''}\r`)
    await this.foreground(tid, token, 'node')
    await waitFor(
      async () => (await journalText(this.stack, this.sid, tid)).includes(`fake-agent ${id} ready`),
      20_000,
      `agent ${id} ready`,
    )
    return home
  }

  async stream(path: string, token = this.stack.token, headers: Record<string, string> = {}): Promise<EventStream> {
    const controller = new AbortController()
    this.#streams.push(controller)
    const response = await fetch(`${this.stack.api.url}${path}`, {
      headers: { ...headers, authorization: `Bearer ${token}` },
      signal: controller.signal,
    })
    if (!response.ok) throw Object.assign(new Error(`stream ${response.status}`), { status: response.status, body: await response.json() })
    return new EventStream(response, controller)
  }

  async stop(): Promise<void> {
    for (const stream of this.#streams) stream.abort()
    await this.stack.stop()
  }
}

export class EventStream {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly #decoder = new TextDecoder()
  #buffer = ''

  constructor(
    response: Response,
    readonly controller: AbortController,
  ) {
    this.#reader = response.body!.getReader()
  }

  /** The next event (comments skipped); undefined at the end. */
  async next(timeoutMs = 20_000): Promise<SseEvent | undefined> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const at = this.#buffer.indexOf('\n\n')
      if (at >= 0) {
        const block = this.#buffer.slice(0, at)
        this.#buffer = this.#buffer.slice(at + 2)
        let event = 'message'
        let id: string | undefined
        const data: string[] = []
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7)
          else if (line.startsWith('id: ')) id = line.slice(4)
          else if (line.startsWith('data: ')) data.push(line.slice(6))
        }
        if (data.length > 0) return { event, ...(id === undefined ? {} : { id }), data: JSON.parse(data.join('\n')) }
        continue
      }
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(1, deadline - Date.now()))))
      const read = await Promise.race([this.#reader.read(), late]).finally(() => clearTimeout(timer))
      if (read === 'late') throw new Error(`no event within ${timeoutMs} ms`)
      if (read.done) return undefined
      this.#buffer += this.#decoder.decode(read.value, { stream: true })
    }
  }

  async drain(): Promise<void> {
    try {
      for (;;) if ((await this.#reader.read()).done) return
    } catch {
      // aborted
    }
  }

  close(): void {
    this.controller.abort()
  }
}
