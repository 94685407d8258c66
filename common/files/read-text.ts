/**
 * Files.readText: one page of text from a workspace file (through the sidecar, which holds the
 * filesystem authority), a session attachment or an archived tool result (from libSQL, here),
 * with a signed continuation bound to the session and the calling token.
 */
import { pageOfBytes } from '../line-page.ts'
import { MAX_FILE_PAGE_BYTES, MAX_FILE_PAGE_LINES } from '../../schema/limits.ts'
import type { ReadTextPage, ReadTextRequest } from '../../schema/wire/files.ts'
import type { Database } from '../../storage/client.ts'
import type { SidecarClient } from '../../api/sidecar-client.ts'
import { openContinuation, signContinuation, type Binding, type Continuation } from './next.ts'
import { parseAddress, resourceBytes } from '../../storage/resources.ts'

export const READ_TEXT_KEY_PURPOSE = 'read-text-continuation'

/**
 * Where readText gets workspace text and its signing key: the sidecar client in the API; in the
 * sidecar itself (a workflow's `readText()`), its own file operations and the same derived key.
 */
export interface ReadTextDeps {
  db: Database
  sidecar: Pick<SidecarClient, 'signingKey' | 'readFileText'>
}

export async function readText(deps: ReadTextDeps, binding: Binding, request: ReadTextRequest): Promise<ReadTextPage> {
  const key = await deps.sidecar.signingKey(READ_TEXT_KEY_PURPOSE)
  const at: Continuation =
    'next' in request
      ? await openContinuation(key, binding, request.next)
      : { address: request.address, offset: request.offset ?? 1, limit: MAX_FILE_PAGE_LINES }
  const limit = Math.min(request.limit ?? at.limit, MAX_FILE_PAGE_LINES)
  const target = parseAddress(at.address)

  if (target.kind === 'file') {
    const page = await deps.sidecar.readFileText(binding.sessionId, { path: target.path, offset: at.offset, limit })
    const { text, offset, lines, eof, version } = page
    const base = { address: at.address, kind: 'file' as const, text, offset, lines, eof, version }
    if (eof) return base
    return { ...base, next: await signContinuation(key, binding, { address: at.address, offset: offset + lines, limit }) }
  }

  const bytes = await resourceBytes(deps.db, binding.sessionId, target.kind, target.id)
  const resume = at.byte === undefined ? undefined : { line: at.offset, byte: Math.min(at.byte, bytes.length) }
  const page = pageOfBytes(bytes, at.offset, limit, MAX_FILE_PAGE_BYTES, resume)
  const base = { address: at.address, kind: target.kind, text: page.text, offset: page.offset, lines: page.lines, eof: page.eof }
  if (page.eof) return base
  const next = { address: at.address, offset: page.offset + page.lines, limit, byte: page.nextByte }
  return { ...base, next: await signContinuation(key, binding, next) }
}
