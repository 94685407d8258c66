/**
 * The full stack for client tests: a real sidecar process, the real Node API on the same libSQL
 * file, a token with every grant, and a scratch directory to register as a workspace. Stopped by
 * pid through the helpers it uses.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createToken } from '../../storage/tokens.ts'
import { startNodeApi, type RunningApi } from '../../api/runtime/node.ts'
import { GRANTS } from '../../schema/grants.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'

export interface Stack {
  api: RunningApi
  /** Replaceable: a test that restarts the sidecar stores the new one here. */
  sidecar: RunningSidecar
  storage: Storage
  token: string
  /** A real directory to add as a workspace. */
  workspaceDir: string
  /** Stops everything that is still running and removes the scratch directories. */
  stop(): Promise<void>
}

export interface StackOptions {
  /** More environment for the sidecar (e.g. TERMKEEP_SHELLS_FILE for scripted "shells"). */
  sidecarEnv?: Record<string, string>
  /** Where below the stack's scratch directory the sidecar's data directory is (default `data`). */
  dataDir?: string
}

export async function startStack(name: string, options: StackOptions = {}): Promise<Stack> {
  const root = mkdtempSync(join(tmpdir(), `termkeep-${name}-`))
  mkdirSync(join(root, 'project'))
  const workspaceDir = realpathSync(join(root, 'project'))
  // The page tests type bash syntax and rely on bash's bracketed paste: pin the default shell
  // rather than inherit whatever $SHELL (or none, as in CI) the test runner has.
  const sidecar = await startSidecar({ dataDir: join(root, options.dataDir ?? 'data'), env: { SHELL: '/bin/bash', ...options.sidecarEnv } })
  const storage = await openStorage({ url: sidecar.databaseUrl })
  await migrate(storage.client)
  const api = await startNodeApi({ storage, sidecarUrl: sidecar.url, sidecarSecret: sidecar.secret, host: '127.0.0.1', port: 0 })
  const { secret } = await createToken(storage.db, { name: `${name}-test`, grants: GRANTS, sessions: 'all' })
  const stack: Stack = {
    api,
    sidecar,
    storage,
    token: secret,
    workspaceDir,
    stop: async () => {
      await stack.api.close()
      await stack.sidecar.stop() // the current one: a test may have restarted it
      stack.storage.close()
      rmSync(root, { recursive: true, force: true })
    },
  }
  return stack
}

/** Everything a terminal printed so far, read page by page from the journal through the API. */
export async function journalText(stack: Stack, sessionId: string, terminalId: string): Promise<string> {
  let after = 0
  let text = ''
  for (;;) {
    const url = `${stack.api.url}/v1/sessions/${sessionId}/terminals/${terminalId}/output?after=${after}&limit=256`
    const page = (await (await fetch(url, { headers: { authorization: `Bearer ${stack.token}` } })).json()) as {
      items: { data?: string }[]
      next: number
    }
    for (const item of page.items) if (item.data) text += Buffer.from(item.data, 'base64').toString('latin1')
    if (page.items.length === 0 || page.next === after) return text
    after = page.next
  }
}

/**
 * Whether the journal shows a typed command line as entered: its echo, from the last `start` on,
 * reaches `end` followed by the Enter's CR LF. Readline's line-wrap carriage returns (` \r`) are
 * taken out first, since a long command wraps wherever the prompt's length puts it, and so are OSC
 * sequences: shell integration's command marks repeat the command line (docs/commands.md).
 */
export function commandEntered(journal: string, start: string, end: string): boolean {
  const text = journal.replace(/\x1b\][^\x07\x1b]*(\x07|\x1b\\)/g, '')
  const at = text.lastIndexOf(start)
  return (
    at !== -1 &&
    text
      .slice(at)
      .replace(/ ?\r(?!\n)/g, '')
      .includes(`${end}\r\n`)
  )
}
