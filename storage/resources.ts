/**
 * Session resources in libSQL: attachments and archived tool results. Stored once, immutable,
 * and always looked up together with their session, so an id from another session is missing.
 *
 * A resource of more than RESOURCE_PART_BYTES is written in parts (resource_parts), one statement
 * each with a yield to the event loop between them, and its row, with an empty `content`, only
 * after the last part: the embedded driver writes a blob synchronously, and one 32 MiB insert
 * held every other request for 0.4 s. An unfinished store is marked in resource_uploads, so parts
 * a crash left behind are swept later; nobody could read them, the id was never answered.
 */
import { and, asc, eq, inArray, lt } from 'drizzle-orm'
import type { BatchItem } from 'drizzle-orm/batch'
import { TermkeepError } from '../schema/errors.ts'
import { MAX_RESOURCE_BYTES } from '../schema/limits.ts'
import { RESOURCE_PART_BYTES, RESOURCE_UPLOAD_ABANDON_MS } from './tuning.ts'
import { attachments, resourceParts, resourceUploads, toolResults } from './tables.ts'
import type { StoreAttachment, StoredResource, StoreToolResult } from '../schema/wire/files.ts'
import type { Database } from './client.ts'
import { randomId } from '../common/crypto.ts'
import { yieldToLoop } from '../common/event-loop.ts'
import { concatBytes, decodeBase64, encodeUtf8 } from '../common/bytes.ts'
import type { ResourceKind } from '../common/files/read-text.ts'

type Blob = (typeof resourceParts.$inferInsert)['content']
// drizzle types blob columns as Node's Buffer; libSQL takes any Uint8Array.
const blob = (bytes: Uint8Array) => bytes as Blob

/** Deletes the parts of stores a crash cut short (their row was never written). */
async function sweepAbandoned(db: Database): Promise<void> {
  const stale = await db
    .select({ id: resourceUploads.resourceId })
    .from(resourceUploads)
    .where(lt(resourceUploads.startedAt, Date.now() - RESOURCE_UPLOAD_ABANDON_MS))
  if (stale.length === 0) return
  const ids = stale.map((s) => s.id)
  await db.batch([
    db.delete(resourceParts).where(inArray(resourceParts.resourceId, ids)),
    db.delete(resourceUploads).where(inArray(resourceUploads.resourceId, ids)),
  ])
}

/** The statement that writes a resource's row with `content` (inline, or empty when in parts). */
type RowInsert = (content: Uint8Array) => BatchItem<'sqlite'>

/**
 * Stores `bytes` for resource `id`: a small one inline, in its row; a large one as parts first,
 * then its row with an empty content, atomically with the end of its upload mark.
 */
async function storeContent(db: Database, id: string, bytes: Uint8Array, row: RowInsert): Promise<void> {
  if (bytes.length <= RESOURCE_PART_BYTES) return void (await row(bytes))
  await sweepAbandoned(db)
  await db.insert(resourceUploads).values({ resourceId: id, startedAt: Date.now() })
  try {
    for (let seq = 0, at = 0; at < bytes.length; seq++, at += RESOURCE_PART_BYTES) {
      await db.insert(resourceParts).values({ resourceId: id, seq, content: blob(bytes.subarray(at, at + RESOURCE_PART_BYTES)) })
      await yieldToLoop()
    }
    await db.batch([row(new Uint8Array(0)), db.delete(resourceUploads).where(eq(resourceUploads.resourceId, id))])
  } catch (error) {
    const forget = [
      db.delete(resourceParts).where(eq(resourceParts.resourceId, id)),
      db.delete(resourceUploads).where(eq(resourceUploads.resourceId, id)),
    ] as const
    await db.batch(forget).catch(() => {}) // left to the sweep
    throw error
  }
}

/** A resource's bytes: its row's content, or its parts in order when the content is empty. */
async function loadContent(db: Database, id: string, inline: Uint8Array): Promise<Uint8Array> {
  if (inline.length > 0) return inline
  const seqs = await db
    .select({ seq: resourceParts.seq })
    .from(resourceParts)
    .where(eq(resourceParts.resourceId, id))
    .orderBy(asc(resourceParts.seq))
  const parts: Uint8Array[] = []
  for (const { seq } of seqs) {
    const [part] = await db
      .select({ content: resourceParts.content })
      .from(resourceParts)
      .where(and(eq(resourceParts.resourceId, id), eq(resourceParts.seq, seq)))
    parts.push(asBytes(part!.content))
    await yieldToLoop()
  }
  return concatBytes(parts)
}

const asBytes = (content: Uint8Array) => new Uint8Array(content.buffer, content.byteOffset, content.byteLength)

export async function storeAttachment(db: Database, sessionId: string, input: StoreAttachment): Promise<StoredResource> {
  // Sized before it is decoded, and decoded without holding the event loop (content.ts).
  const content =
    input.encoding === 'base64'
      ? await decodeBase64(input.content, MAX_RESOURCE_BYTES)
      : await encodeUtf8(input.content, MAX_RESOURCE_BYTES)
  const id = randomId('att')
  const { name, mediaType } = input
  await storeContent(db, id, content, (inline) =>
    db.insert(attachments).values({ id, sessionId, name, mediaType, content: blob(inline), bytes: content.length, createdAt: Date.now() }),
  )
  return { id, address: `attachment:${id}`, bytes: content.length }
}

/** A tool result is text; in parts, its UTF-8 bytes (the row's text is then empty). */
export async function storeToolResult(db: Database, sessionId: string, input: StoreToolResult): Promise<StoredResource> {
  const content = await encodeUtf8(input.content, MAX_RESOURCE_BYTES)
  const id = randomId('tr')
  await storeContent(db, id, content, (inline) =>
    db.insert(toolResults).values({
      id,
      sessionId,
      toolName: input.toolName,
      content: inline.length === 0 ? '' : input.content,
      bytes: content.length,
      createdAt: Date.now(),
    }),
  )
  return { id, address: `tool-result:${id}`, bytes: content.length }
}

/** The resource's bytes, or `resource/not-found` (also for another session's id). */
export async function resourceBytes(db: Database, sessionId: string, kind: ResourceKind, id: string): Promise<Uint8Array> {
  if (kind === 'attachment') {
    const [row] = await db
      .select({ content: attachments.content })
      .from(attachments)
      .where(and(eq(attachments.id, id), eq(attachments.sessionId, sessionId)))
      .limit(1)
    if (row) return loadContent(db, id, asBytes(row.content))
  } else {
    const [row] = await db
      .select({ content: toolResults.content })
      .from(toolResults)
      .where(and(eq(toolResults.id, id), eq(toolResults.sessionId, sessionId)))
      .limit(1)
    if (row) return loadContent(db, id, new TextEncoder().encode(row.content))
  }
  throw new TermkeepError('resource/not-found', `no ${kind} ${id} in this session`, { address: `${kind}:${id}` })
}
