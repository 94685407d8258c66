/**
 * `POST /v1/paths/canonicalize {path}` → `{path, kind}`: the realpath of an absolute path and
 * whether it is a directory. The API asks here because it has no filesystem of its own.
 */
import { realpath, stat } from 'node:fs/promises'
import { isAbsolute } from 'node:path'
import { Hono } from 'hono'
import * as v from 'valibot'
import { TermkeepError } from '../schema/errors.ts'
import { CanonicalizeRequest, type CanonicalPath } from '../schema/wire/paths.ts'

export async function canonicalize(path: string): Promise<CanonicalPath> {
  if (!isAbsolute(path)) throw new TermkeepError('workspace/invalid-path', `not an absolute path: ${path}`, { path, reason: 'relative' })
  let real: string
  try {
    real = await realpath(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const reason = code === 'ENOENT' || code === 'ENOTDIR' ? 'not-found' : code === 'EACCES' ? 'permission-denied' : 'unreadable'
    throw new TermkeepError('workspace/invalid-path', `cannot resolve ${path} (${code ?? 'error'})`, { path, reason })
  }
  const info = await stat(real)
  return { path: real, kind: info.isDirectory() ? 'directory' : info.isFile() ? 'file' : 'other' }
}

export const paths = new Hono().post('/v1/paths/canonicalize', async (c) => {
  const body: unknown = await c.req.json().catch(() => undefined)
  const parsed = v.safeParse(CanonicalizeRequest, body)
  if (!parsed.success) throw new TermkeepError('request/invalid', parsed.issues.map((i) => i.message).join('; '))
  return c.json(await canonicalize(parsed.output.path))
})
