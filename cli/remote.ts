/**
 * What the client commands (`ls`, `attach`, `display`) share: where the server is and which token
 * to send (flags first, then TERMKEEP_URL / TERMKEEP_TOKEN), and one-line messages for the ways a
 * request can fail before it does anything useful.
 */
import { ApiError, TermkeepClient, UnreachableError } from '../web/client/api.ts'
import { UsageError } from './token.ts'

export const REMOTE_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
} as const

export function remoteClient(values: { url?: string; token?: string }, env: NodeJS.ProcessEnv = process.env): TermkeepClient {
  const url = values.url ?? env.TERMKEEP_URL ?? `http://127.0.0.1:${env.PORT || 8787}`
  const token = values.token ?? env.TERMKEEP_TOKEN
  if (!/^https?:\/\/[^/]/.test(url)) throw new UsageError(`termkeep: the server URL must start with http:// or https:// (got "${url}")`)
  if (!token) throw new UsageError('termkeep: no token: pass --token or set TERMKEEP_TOKEN (`npx termkeep token create` mints one)')
  return new TermkeepClient({ url, token })
}

/** The one line to print for an error from a client command, or undefined if it is a bug. */
export function describeRemoteError(error: unknown): string | undefined {
  if (error instanceof UnreachableError) return `termkeep: ${error.message}; check --url or TERMKEEP_URL`
  if (error instanceof ApiError) {
    if (error.status === 401) return `termkeep: the server refused the token (${error.code}); check --token or TERMKEEP_TOKEN`
    if (error.status === 403) return `termkeep: ${error.message} (${error.code})`
    return `termkeep: ${error.message} (${error.code})`
  }
  return undefined
}
