/**
 * Path canonicalization, served by the sidecar (the API has no filesystem):
 *
 *   POST /v1/paths/canonicalize  CanonicalizeRequest → CanonicalPath
 *
 * The path must be absolute; the answer is its realpath and what it is. A missing path is
 * `workspace/invalid-path` with `reason: 'not-found'`; a relative one is `request/invalid`.
 */
import * as v from 'valibot'
import { MAX_PATH_CHARS } from '../limits.ts'

export const AbsolutePath = v.pipe(
  v.string(),
  v.minLength(1, 'a path is required'),
  v.maxLength(MAX_PATH_CHARS, `paths are at most ${MAX_PATH_CHARS} characters`),
  v.check((p) => !p.includes('\0'), 'paths contain no NUL'),
)

export const CanonicalizeRequest = v.object({ path: AbsolutePath })
export type CanonicalizeRequest = v.InferOutput<typeof CanonicalizeRequest>

export const PathKind = v.picklist(['directory', 'file', 'other'])
export const CanonicalPath = v.object({ path: v.string(), kind: PathKind })
export type CanonicalPath = v.InferOutput<typeof CanonicalPath>
