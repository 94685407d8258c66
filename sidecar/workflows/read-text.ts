/**
 * A workflow's `readText(address)`: Files.readText (common/files/read-text.ts, the one implementation)
 * under the authority of the token that started the run. That authority is re-derived from libSQL
 * on every call (storage/authority.ts): a token revoked, expired, stripped of `files:read` or of
 * the session since the run began reads nothing more. Workspace text comes from this sidecar's own
 * confined file operations; `next` continuations are signed with the key the API derives from the
 * same secret, bound to the session and the token, so a page's `next` also continues over HTTP.
 */
import * as v from 'valibot'
import { readText, type ResourceKind } from '../../common/files/read-text.ts'
import { deriveSigningKey } from '../../common/crypto.ts'
import { TermkeepError } from '../../schema/errors.ts'
import { ReadTextRequest, type ReadTextPage } from '../../schema/wire/files.ts'
import { authenticateTokenId, coversSession } from '../../storage/authority.ts'
import type { Storage } from '../../storage/client.ts'
import { resourceBytes } from '../../storage/resources.ts'
import { workspaceScope } from '../files/routes.ts'
import { readFileText } from '../files/operations.ts'

export interface WorkflowReaderDeps {
  storage: Storage
  secret: string
  filesAllowOutside?: boolean
}

export class WorkflowReader {
  readonly #deps: WorkflowReaderDeps
  readonly #keys = new Map<string, Promise<CryptoKey>>()

  constructor(deps: WorkflowReaderDeps) {
    this.#deps = deps
  }

  /** One page, or a TermkeepError (`request/invalid` for a malformed request: hook misuse). */
  async read(binding: { sessionId: string; tokenId: string }, request: unknown): Promise<ReadTextPage> {
    const parsed = v.safeParse(ReadTextRequest, request)
    if (!parsed.success) {
      throw new TermkeepError('request/invalid', `readText(): ${parsed.issues.map((i) => i.message).join('; ')}`)
    }
    const { db } = this.#deps.storage
    const authority = await authenticateTokenId(db, binding.tokenId)
    if (!authority)
      throw new TermkeepError('auth/invalid-token', 'the token that started this run is revoked or expired: readText() reads nothing more')
    if (!authority.grants.has('files:read'))
      throw new TermkeepError('auth/forbidden', 'the token that started this run lacks the grant files:read', { required: 'files:read' })
    if (!coversSession(authority, binding.sessionId)) throw new TermkeepError('session/not-found', `no session ${binding.sessionId}`)
    const source = {
      signingKey: (purpose: string) => this.#key(purpose),
      readFileText: async (sessionId: string, query: { path: string; offset: number; limit: number }) =>
        readFileText(await workspaceScope(this.#deps, sessionId), query.path, query),
      resourceBytes: (sessionId: string, kind: ResourceKind, id: string) => resourceBytes(db, sessionId, kind, id),
    }
    return readText(source, binding, parsed.output)
  }

  #key(purpose: string): Promise<CryptoKey> {
    let key = this.#keys.get(purpose)
    if (!key) this.#keys.set(purpose, (key = deriveSigningKey(this.#deps.secret, purpose)))
    return key
  }
}
