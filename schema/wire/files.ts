/**
 * The workspace-files contract. The sidecar serves these routes under the same paths as the public
 * API; the API's sidecar client mirrors them. Every path is resolved inside the session's bound
 * workspace (the workspace that lists the session and whose canonical path is the session's
 * canonical cwd); a session bound to no workspace has no files (404 `workspace/not-found`).
 *
 *   GET /v1/sessions/:sid/files/text?path=&offset=&limit=     → FileText (a page of lines)
 *   GET /v1/sessions/:sid/files/bytes?path=&offset=&length=   → FileBytes (a base64 window)
 *   GET /v1/sessions/:sid/files/all?path=                     → FileBytes (whole file, ≤ 32 MiB)
 *   GET /v1/sessions/:sid/files/related?path=&relative=       → FileBytes (whole related file)
 *   GET /v1/sessions/:sid/files/stat?path=                    → FileStat
 *   GET /v1/sessions/:sid/files/list?path=                    → DirectoryListing
 *   GET /v1/sessions/:sid/files/changes                       SSE: `ready` FilesReady, then `change` FileChange…
 *
 * API only (Files.readText and the session resources it reads):
 *   POST /v1/sessions/:sid/read-text   ReadTextRequest → ReadTextPage
 *   POST /v1/sessions/:sid/attachments StoreAttachment → StoredResource (201)
 *   POST /v1/sessions/:sid/tool-results StoreToolResult → StoredResource (201)
 *
 * Errors (`files/…`, details in brackets): not-found {path}, not-regular-file {path, kind},
 * not-directory {path, kind}, not-text {path}, too-large {path?, limit, fittingLines (text pages)},
 * outside-workspace {path}, bad-request {reason}. `version` is opaque: compare it for equality, never parse it.
 */
import * as v from 'valibot'
import {
  MAX_FILE_PAGE_BYTES,
  MAX_FILE_PAGE_LINES,
  MAX_PATH_CHARS,
  MAX_RESOURCE_BYTES,
  MAX_RESOURCE_NAME_CHARS,
  TERMINAL_ID_PATTERN,
} from '../limits.ts'
import { titleSchema } from './common.ts'

// ── Queries (strings on the wire; numbers must be plain safe integers) ─────────────────────

/** A workspace path: relative to the workspace root, or absolute (allowed only when inside). */
export const FilePath = v.pipe(
  v.string('path is required'),
  v.maxLength(MAX_PATH_CHARS, `paths are at most ${MAX_PATH_CHARS} characters`),
  v.check((s) => !s.includes('\0'), 'paths cannot contain NUL'),
)

function integerParam(name: string, min: number, max: number) {
  return v.pipe(
    v.string(),
    v.regex(/^\d{1,16}$/, `${name} is a non-negative decimal integer`),
    v.transform(Number),
    v.safeInteger(`${name} must be a safe integer`),
    v.minValue(min, `${name} is at least ${min}`),
    v.maxValue(max, `${name} is at most ${max}`),
  )
}

export const TextQuery = v.object({
  path: FilePath,
  /** 1-based first line (default 1). */
  offset: v.optional(integerParam('offset', 1, Number.MAX_SAFE_INTEGER)),
  /** Lines in the page (default and maximum 5,000). */
  limit: v.optional(integerParam('limit', 1, MAX_FILE_PAGE_LINES)),
})
export type TextQuery = v.InferOutput<typeof TextQuery>

export const BytesQuery = v.object({
  path: FilePath,
  /** 0-based first byte (default 0). */
  offset: v.optional(integerParam('offset', 0, Number.MAX_SAFE_INTEGER)),
  /** Window size (default and maximum 2 MiB). */
  length: v.optional(integerParam('length', 0, MAX_FILE_PAGE_BYTES)),
})
export type BytesQuery = v.InferOutput<typeof BytesQuery>

export const PathQuery = v.object({ path: FilePath })
export type PathQuery = v.InferOutput<typeof PathQuery>

/** `path` is the base file; `relative` is resolved from its directory. */
export const RelatedQuery = v.object({ path: FilePath, relative: v.pipe(v.string(), v.maxLength(MAX_PATH_CHARS)) })
export type RelatedQuery = v.InferOutput<typeof RelatedQuery>

/** `list` accepts an empty path (the workspace root). */
export const ListQuery = v.object({ path: v.optional(FilePath, '') })
export type ListQuery = v.InferOutput<typeof ListQuery>

export const EmptyQuery = v.object({})

// ── Results ──────────────────────────────────────────────────────────────────────────────

export const FileKind = v.picklist(['file', 'directory', 'symlink', 'other'])
export type FileKind = v.InferOutput<typeof FileKind>

export const FileStat = v.object({
  /** Canonical (realpath) location. */
  absolutePath: v.string(),
  kind: FileKind,
  /** Opaque; changes whenever the file does. */
  version: v.string(),
  /** Size in bytes (regular files). */
  bytes: v.optional(v.number()),
})
export type FileStat = v.InferOutput<typeof FileStat>

export const FileText = v.object({
  absolutePath: v.string(),
  version: v.string(),
  bytes: v.number(),
  offset: v.number(),
  /** The page's lines joined by `\n`, no final terminator (CRLF read as LF). */
  text: v.string(),
  lines: v.number(),
  eof: v.boolean(),
})
export type FileText = v.InferOutput<typeof FileText>

export const FileBytes = v.object({
  absolutePath: v.string(),
  version: v.string(),
  bytes: v.number(),
  offset: v.number(),
  /** base64 */
  data: v.string(),
  eof: v.boolean(),
})
export type FileBytes = v.InferOutput<typeof FileBytes>

export const DirectoryEntry = v.object({ name: v.string(), kind: FileKind, size: v.optional(v.number()) })
export const DirectoryListing = v.object({
  /** Workspace-relative ('' is the root; absolute when outside reads are allowed and used). */
  path: v.string(),
  absolutePath: v.string(),
  entries: v.array(DirectoryEntry),
  truncated: v.boolean(),
})
export type DirectoryListing = v.InferOutput<typeof DirectoryListing>

/** `ready`: the observation is active; `os` says whether OS-level watching works here. */
export const FilesReady = v.object({ root: v.string(), os: v.boolean(), reason: v.optional(v.string()) })
export type FilesReady = v.InferOutput<typeof FilesReady>

/**
 * `change`: an observation, not a delta. Not resumable (no event ids): after a reconnect, re-read
 * what matters. A subscriber that falls 10,000 changes behind is disconnected rather than buffered. `source` is `termkeep` for changes made through
 * termkeep's own operations and `os` for changes the OS watcher saw (editors, shells, builds).
 */
export const FileChange = v.union([
  v.object({ path: v.string(), absolutePath: v.string(), version: v.string(), source: v.picklist(['termkeep', 'os']) }),
  v.object({ path: v.string(), absolutePath: v.string(), absent: v.literal(true), source: v.picklist(['termkeep', 'os']) }),
])
export type FileChange = v.InferOutput<typeof FileChange>

// ── Files.readText and session resources ────────────────────────────────────────────────

/** Opaque continuation: send it back whole. Bound to the session and token that received it. */
export const ReadTextNext = v.strictObject({ cursor: v.pipe(v.string(), v.maxLength(8192)) })
export type ReadTextNext = v.InferOutput<typeof ReadTextNext>

const PageLimit = v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(MAX_FILE_PAGE_LINES))

/**
 * `address`: a workspace path, `attachment:ID` or `tool-result:ID` (prefix `./` to read a workspace
 * file whose name starts like that). `offset` is the 1-based first line.
 */
export const ReadTextRequest = v.union([
  v.strictObject({
    address: v.pipe(FilePath, v.minLength(1, 'address is empty')),
    offset: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1))),
    limit: v.optional(PageLimit),
  }),
  v.strictObject({ next: ReadTextNext, limit: v.optional(PageLimit) }),
])
export type ReadTextRequest = v.InferOutput<typeof ReadTextRequest>

export const ReadTextPage = v.object({
  address: v.string(),
  kind: v.picklist(['file', 'attachment', 'tool-result']),
  text: v.string(),
  offset: v.number(),
  lines: v.number(),
  eof: v.boolean(),
  /** Workspace files: the version read (compare between pages to notice edits). */
  version: v.optional(v.string()),
  /** Present unless `eof`. */
  next: v.optional(ReadTextNext),
})
export type ReadTextPage = v.InferOutput<typeof ReadTextPage>

export const ResourceId = v.pipe(v.string(), v.regex(TERMINAL_ID_PATTERN, 'resource ids are 1–128 of [A-Za-z0-9_-]'))

/** `content` is UTF-8 text, or base64 with `encoding: 'base64'`; at most 32 MiB decoded. */
export const StoreAttachment = v.strictObject({
  name: titleSchema(MAX_RESOURCE_NAME_CHARS, 'attachment names'),
  mediaType: v.optional(v.pipe(v.string(), v.regex(/^[\w.+-]+\/[\w.+-]+(;.*)?$/, 'a media type like text/plain')), 'text/plain'),
  encoding: v.optional(v.picklist(['utf8', 'base64']), 'utf8'),
  content: v.string(),
})
export type StoreAttachment = v.InferOutput<typeof StoreAttachment>

export const StoreToolResult = v.strictObject({
  toolName: titleSchema(MAX_RESOURCE_NAME_CHARS, 'tool names'),
  content: v.string(),
})
export type StoreToolResult = v.InferOutput<typeof StoreToolResult>

export const StoredResource = v.object({ id: v.string(), address: v.string(), bytes: v.number() })
export type StoredResource = v.InferOutput<typeof StoredResource>

/** The largest request body the store routes accept: base64 of the resource cap plus envelope. */
export const MAX_RESOURCE_BODY_BYTES = Math.ceil(MAX_RESOURCE_BYTES / 3) * 4 + 64 * 1024
