/**
 * The command tests' stack: the real sidecar and Node API (test/browser/stack.ts) whose shells
 * start in a home of the test's own, with rc files that set a prompt and hooks of the user's own
 * (integration must keep them working), and a session to create terminals in.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startStack, type Stack } from '../browser/stack.ts'
import { waitFor } from '../support/ports.ts'

export interface Answer {
  status: number
  body: any
}

/** The user's own rc files: a prompt of theirs and a hook that counts prompts in ~/hooks.log. */
export function userHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'termkeep-home-'))
  // The user's prompt emits plain OSC 133 marks of its own (as a prompt theme may): injected
  // terminals must ignore them, a terminal without integration reads them ('detected').
  writeFileSync(
    join(home, '.bashrc'),
    [
      "PS1='\\[\\e]133;A\\a\\]user-bash\\$ \\[\\e]133;B\\a\\]'",
      "PS0='\\e]133;C\\a'",
      'PROMPT_COMMAND=\'s=$?; printf "\\e]133;D;%s\\a" $s; echo "bash:$s" >> ~/hooks.log\'',
      '',
    ].join('\n'),
  )
  writeFileSync(
    join(home, '.zshrc'),
    `PS1='user-zsh%# '\nprecmd() { echo "zsh:$?" >> ~/hooks.log }\npreexec() { echo "zsh-pre:$1" >> ~/hooks.log }\n`,
  )
  mkdirSync(join(home, '.config', 'fish'), { recursive: true })
  writeFileSync(
    join(home, '.config', 'fish', 'config.fish'),
    `set -g fish_greeting\nfunction fish_prompt; printf 'user-fish> '; end\nfunction user_post --on-event fish_postexec; echo "fish:$status" >> ~/hooks.log; end\n`,
  )
  return home
}

export class Commands {
  private constructor(
    readonly stack: Stack,
    readonly sid: string,
    readonly home: string,
  ) {}

  static async start(name: string, home = userHome(), sidecarEnv: Record<string, string> = {}): Promise<Commands> {
    const stack = await startStack(name, { sidecarEnv: { HOME: home, ...sidecarEnv } })
    const sid = `cmd-${name}`
    const self = new Commands(stack, sid, home)
    const created = await self.call('POST', '/v1/sessions', { json: { id: sid, cwd: stack.workspaceDir } })
    if (created.status !== 201) throw new Error(`session: ${JSON.stringify(created.body)}`)
    return self
  }

  async call(
    method: string,
    path: string,
    init: { token?: string; json?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { authorization: `Bearer ${init.token ?? this.stack.token}`, ...init.headers }
    let body: string | undefined
    if (init.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(init.json)
    }
    const response = await fetch(`${this.stack.api.url}${path}`, { method, headers, body })
    const text = await response.text()
    return { status: response.status, body: text ? JSON.parse(text) : undefined }
  }

  terminal(tid: string): string {
    return `/v1/sessions/${this.sid}/terminals/${tid}`
  }

  /** A new terminal running `shell`, once its shell waits at a prompt with marks. */
  async open(tid: string, shell: string, extra: Record<string, unknown> = {}): Promise<void> {
    const made = await this.call('PUT', this.terminal(tid), { json: { shell, cols: 100, rows: 30, ...extra } })
    if (made.status !== 201) throw new Error(`create: ${JSON.stringify(made.body)}`)
  }

  /** Runs `command`, retrying while the shell is still starting (no prompt with marks yet). */
  async run(tid: string, command: string, timeoutMs = 10_000): Promise<Answer> {
    let answer: Answer | undefined
    await waitFor(
      async () => {
        answer = await this.call('POST', `${this.terminal(tid)}/commands`, { json: { command, timeoutMs } })
        const starting = answer.status === 409 && ['no-prompt', 'busy'].includes(answer.body?.error?.reason)
        return !starting
      },
      20_000,
      `a prompt in ${tid}`,
    )
    return answer!
  }

  screen(tid: string): Promise<Answer> {
    return this.call('GET', `${this.terminal(tid)}/screen`)
  }

  async stop(): Promise<void> {
    await this.stack.stop()
  }
}

/** A person attached to the terminal: a follow stream holding control until `close()`. */
export async function attachPerson(
  c: Commands,
  tid: string,
  attachment = 'person',
): Promise<{ type(text: string): Promise<Answer>; close(): void }> {
  const controller = new AbortController()
  const response = await fetch(`${c.stack.api.url}${c.terminal(tid)}/follow?attachment=${attachment}`, {
    headers: { authorization: `Bearer ${c.stack.token}` },
    signal: controller.signal,
  })
  if (response.status !== 200) throw new Error(`follow: ${response.status}`)
  const reader = response.body!.getReader()
  void (async () => {
    // Read on, so the stream never stalls on a full socket.
    while (!(await reader.read().catch(() => ({ done: true }))).done);
  })()
  return {
    type: async (text: string) => {
      const answer = await fetch(`${c.stack.api.url}${c.terminal(tid)}/input`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${c.stack.token}`,
          'termkeep-attachment': attachment,
          'content-type': 'application/octet-stream',
        },
        body: text,
      })
      return { status: answer.status, body: await answer.text() }
    },
    close: () => controller.abort(),
  }
}
