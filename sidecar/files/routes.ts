/**
 * The sidecar's workspace-file routes (contract: schema/wire/files.ts). The scope of every request
 * is re-derived here from libSQL and the filesystem: the session's bound workspace, canonical.
 */
import { realpath } from 'node:fs/promises'
import { Hono, type Context } from 'hono'
import { streamSSE } from 'hono/streaming'
import * as v from 'valibot'
import { TermkeepError } from '../../schema/errors.ts'
import { SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import { MAX_FILE_CHANGES_QUEUED } from '../tuning.ts'
import {
  BytesQuery,
  EmptyQuery,
  ListQuery,
  PathQuery,
  RelatedQuery,
  TextQuery,
  type FileChange,
  type FilesReady,
} from '../../schema/wire/files.ts'
import { sessionWorkspace } from '../../storage/bindings.ts'
import type { Storage } from '../../storage/client.ts'
import { FileChangeHub, dedupe } from './changes.ts'
import type { Scope } from './confine.ts'
import { list, readAll, readBytes, readFileText, readRelated, stat } from './operations.ts'

export interface FileRoutesDeps {
  storage: Storage
  /** TERMKEEP_FILES_ALLOW_OUTSIDE; off unless the deployment says so. */
  filesAllowOutside?: boolean
  /** Where termkeep's own writers report changes; one per sidecar. */
  fileChanges?: FileChangeHub
}

const canonical = (path: string) => realpath(path).catch(() => undefined)

/** The session's file scope, re-derived from libSQL and the filesystem on every call. */
export async function workspaceScope(deps: Pick<FileRoutesDeps, 'storage' | 'filesAllowOutside'>, sessionId: string): Promise<Scope> {
  const binding = await sessionWorkspace(deps.storage.db, sessionId, canonical)
  if (!binding) throw new TermkeepError('session/not-found', `no session ${sessionId}`)
  if (!binding.workspace) {
    throw new TermkeepError('workspace/not-found', `session ${sessionId} is not bound to a workspace, so it has no files`)
  }
  return { root: binding.workspace.root, allowOutside: deps.filesAllowOutside ?? false }
}

function query<S extends v.GenericSchema>(c: Context, schema: S): v.InferOutput<S> {
  const result = v.safeParse(schema, c.req.query())
  if (!result.success) {
    const issue = result.issues[0]
    const key = issue.path?.map((p) => String(p.key)).join('.')
    throw new TermkeepError('files/bad-request', key ? `${key}: ${issue.message}` : issue.message, {
      reason: 'invalid-query',
    })
  }
  return result.output
}

export function fileRoutes(deps: FileRoutesDeps): Hono {
  const hub = deps.fileChanges ?? new FileChangeHub()
  const scope = (c: Context) => workspaceScope(deps, c.req.param('sid')!)
  return new Hono()
    .get('/v1/sessions/:sid/files/text', async (c) => {
      const q = query(c, TextQuery)
      return c.json(await readFileText(await scope(c), q.path, q, { signal: c.req.raw.signal }))
    })
    .get('/v1/sessions/:sid/files/bytes', async (c) => {
      const q = query(c, BytesQuery)
      return c.json(await readBytes(await scope(c), q.path, q))
    })
    .get('/v1/sessions/:sid/files/all', async (c) => {
      const q = query(c, PathQuery)
      return c.json(await readAll(await scope(c), q.path))
    })
    .get('/v1/sessions/:sid/files/related', async (c) => {
      const q = query(c, RelatedQuery)
      return c.json(await readRelated(await scope(c), q.path, q.relative))
    })
    .get('/v1/sessions/:sid/files/stat', async (c) => {
      const q = query(c, PathQuery)
      return c.json(await stat(await scope(c), q.path))
    })
    .get('/v1/sessions/:sid/files/list', async (c) => {
      const q = query(c, ListQuery)
      return c.json(await list(await scope(c), q.path))
    })
    .get('/v1/sessions/:sid/files/changes', async (c) => {
      query(c, EmptyQuery)
      const { root } = await scope(c)
      return streamSSE(c, async (stream) => {
        const queue: FileChange[] = []
        let wake: (() => void) | undefined
        let overflow = false
        const fresh = dedupe()
        const subscription = await hub.subscribe(root, (change) => {
          if (!fresh(change)) return
          if (queue.length >= MAX_FILE_CHANGES_QUEUED) overflow = true
          else queue.push(change)
          wake?.()
        })
        const stopped = new Promise<void>((resolve) => stream.onAbort(resolve))
        const heartbeat = setInterval(() => void stream.write(': heartbeat\n\n').catch(() => undefined), SSE_HEARTBEAT_MS)
        try {
          const ready: FilesReady = subscription.reason
            ? { root, os: subscription.os, reason: subscription.reason }
            : { root, os: subscription.os }
          await stream.writeSSE({ event: 'ready', data: JSON.stringify(ready) })
          while (!stream.aborted && !stream.closed && !overflow) {
            const change = queue.shift()
            if (change) {
              await stream.writeSSE({ event: 'change', data: JSON.stringify(change) })
              continue
            }
            await Promise.race([new Promise<void>((resolve) => (wake = resolve)), stopped])
            wake = undefined
          }
        } finally {
          clearInterval(heartbeat)
          subscription.close()
        }
      })
    })
}
