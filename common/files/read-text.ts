/**
 * Files.readText: one page of text from a workspace file (the sidecar holds the filesystem
 * authority), a session attachment or an archived tool result (from libSQL), with a signed
 * continuation bound to the session and the calling token. The API serves it over HTTP and a
 * workflow's `readText()` in the sidecar calls it; each hands in where the bytes come from.
 */
import { pageOfBytes } from '../line-page.ts'
import { MAX_FILE_PAGE_BYTES, MAX_FILE_PAGE_LINES } from '../../schema/limits.ts'
import type { FileText, ReadTextPage, ReadTextRequest } from '../../schema/wire/files.ts'
import { openContinuation, signContinuation, type Binding, type Continuation } from './next.ts'

export const READ_TEXT_KEY_PURPOSE = 'read-text-continuation'

export type ResourceKind = 'attachment' | 'tool-result'

/** Pure: what an address names. Anything without a resource prefix is a workspace path. */
export function parseAddress(address: string): { kind: 'file'; path: string } | { kind: ResourceKind; id: string } {
  const match = /^(attachment|tool-result):(.*)$/s.exec(address)
  if (!match) return { kind: 'file', path: address }
  return { kind: match[1] as ResourceKind, id: match[2]! }
}

/**
 * Where readText gets its bytes and its signing key: in the API, the sidecar client and libSQL;
 * in the sidecar itself (a workflow's `readText()`), its own file operations, libSQL and the same
 * derived key.
 */
export interface ReadTextSource {
  signingKey(purpose: string): Promise<CryptoKey>
  readFileText(sessionId: string, query: { path: string; offset: number; limit: number }): Promise<FileText>
  resourceBytes(sessionId: string, kind: ResourceKind, id: string): Promise<Uint8Array>
}

export async function readText(source: ReadTextSource, binding: Binding, request: ReadTextRequest): Promise<ReadTextPage> {
  const key = await source.signingKey(READ_TEXT_KEY_PURPOSE)
  const at: Continuation =
    'next' in request
      ? await openContinuation(key, binding, request.next)
      : { address: request.address, offset: request.offset ?? 1, limit: MAX_FILE_PAGE_LINES }
  const limit = Math.min(request.limit ?? at.limit, MAX_FILE_PAGE_LINES)
  const target = parseAddress(at.address)

  if (target.kind === 'file') {
    const page = await source.readFileText(binding.sessionId, { path: target.path, offset: at.offset, limit })
    const { text, offset, lines, eof, version } = page
    const base = { address: at.address, kind: 'file' as const, text, offset, lines, eof, version }
    if (eof) return base
    return { ...base, next: await signContinuation(key, binding, { address: at.address, offset: offset + lines, limit }) }
  }

  const bytes = await source.resourceBytes(binding.sessionId, target.kind, target.id)
  const resume = at.byte === undefined ? undefined : { line: at.offset, byte: Math.min(at.byte, bytes.length) }
  const page = pageOfBytes(bytes, at.offset, limit, MAX_FILE_PAGE_BYTES, resume)
  const base = { address: at.address, kind: target.kind, text: page.text, offset: page.offset, lines: page.lines, eof: page.eof }
  if (page.eof) return base
  const next = { address: at.address, offset: page.offset + page.lines, limit, byte: page.nextByte }
  return { ...base, next: await signContinuation(key, binding, next) }
}
