/**
 * Session resources in libSQL: attachments and archived tool results. Stored once, immutable,
 * and always looked up together with their session, so an id from another session is missing.
 */
import { and, eq } from 'drizzle-orm'
import { TermkeepError } from '../../schema/errors.ts'
import { MAX_RESOURCE_BYTES } from '../../schema/limits.ts'
import { attachments, toolResults } from '../../schema/tables.ts'
import type { StoreAttachment, StoredResource, StoreToolResult } from '../../schema/wire/files.ts'
import type { Database } from '../../storage/client.ts'
import { randomId } from '../auth/secrets.ts'

export type ResourceKind = 'attachment' | 'tool-result'

/** Pure: what an address names. Anything without a resource prefix is a workspace path. */
export function parseAddress(address: string): { kind: 'file'; path: string } | { kind: ResourceKind; id: string } {
  const match = /^(attachment|tool-result):(.*)$/s.exec(address)
  if (!match) return { kind: 'file', path: address }
  return { kind: match[1] as ResourceKind, id: match[2] }
}

function decodeBase64(text: string): Uint8Array {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) {
    throw new TermkeepError('request/invalid', 'content is not valid base64')
  }
  const binary = atob(text)
  return Uint8Array.from(binary, (c) => c.charCodeAt(0))
}

function checkSize(bytes: number): void {
  if (bytes > MAX_RESOURCE_BYTES) {
    throw new TermkeepError('request/too-large', `a stored resource is at most ${MAX_RESOURCE_BYTES} bytes`, {
      limit: MAX_RESOURCE_BYTES,
    })
  }
}

export async function storeAttachment(db: Database, sessionId: string, input: StoreAttachment): Promise<StoredResource> {
  const content = input.encoding === 'base64' ? decodeBase64(input.content) : new TextEncoder().encode(input.content)
  checkSize(content.length)
  const id = randomId('att')
  await db.insert(attachments).values({
    id,
    sessionId,
    name: input.name,
    mediaType: input.mediaType,
    // drizzle types blob columns as Node's Buffer; libSQL takes any Uint8Array.
    content: content as (typeof attachments.$inferInsert)['content'],
    bytes: content.length,
    createdAt: Date.now(),
  })
  return { id, address: `attachment:${id}`, bytes: content.length }
}

export async function storeToolResult(db: Database, sessionId: string, input: StoreToolResult): Promise<StoredResource> {
  const bytes = new TextEncoder().encode(input.content).length
  checkSize(bytes)
  const id = randomId('tr')
  await db.insert(toolResults).values({ id, sessionId, toolName: input.toolName, content: input.content, bytes, createdAt: Date.now() })
  return { id, address: `tool-result:${id}`, bytes }
}

/** The resource's bytes, or `resource/not-found` (also for another session's id). */
export async function resourceBytes(db: Database, sessionId: string, kind: ResourceKind, id: string): Promise<Uint8Array> {
  if (kind === 'attachment') {
    const [row] = await db
      .select({ content: attachments.content })
      .from(attachments)
      .where(and(eq(attachments.id, id), eq(attachments.sessionId, sessionId)))
      .limit(1)
    if (row) return new Uint8Array(row.content.buffer, row.content.byteOffset, row.content.byteLength)
  } else {
    const [row] = await db
      .select({ content: toolResults.content })
      .from(toolResults)
      .where(and(eq(toolResults.id, id), eq(toolResults.sessionId, sessionId)))
      .limit(1)
    if (row) return new TextEncoder().encode(row.content)
  }
  throw new TermkeepError('resource/not-found', `no ${kind} ${id} in this session`, { address: `${kind}:${id}` })
}
