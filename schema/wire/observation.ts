/**
 * Terminal observation for agent providers (seed 004): bounded facts and opaque handles about one
 * terminal's exact environment, never filesystem authority. The sidecar implements these routes
 * under the same paths as the public API; the API checks grants and declared names first.
 *
 *   GET  /v1/sessions/:sid/terminals/:tid/observation                    → ObservationContext
 *   POST …/observation/processes/<operation>   {request}                 → {response}
 *   POST …/observation/files/<operation>       {request}                 → {response}
 *   GET  …/observation/files/watchDirectory?root=&extensions=&maxDepth=&maxEntries=&maxBytes=
 *        SSE `snapshot` {entries, truncated}: the current listing, then one after each change
 *   GET  …/observation/files/follow?handle=&maxChunkBytes=&after=   (or Last-Event-ID: a cursor)
 *        SSE `append` | `truncate` | `replace` {offset, bytes (base64)}, id = the cursor after it
 *
 * The seed's positional arguments are fields by name (`handle`, `root`, `processes`, `names`,
 * `relativePath`, `providerPath`) beside its options, flattened. "Or undefined" is `null` (200).
 * A handle that is forged, tampered, from another terminal, or whose object is gone is 404
 * `observe/handle-invalid`; a path that could escape (absolute where a relative one belongs,
 * `..`, NUL) is 400 `request/invalid` before anything is looked at; a path that escapes only
 * once symlinks are resolved is `null`.
 *
 * observation-operations.ts lists every JSON operation with its grant and schemas.
 */
import * as v from 'valibot'
import type { Grant } from '../grants.ts'
import {
  MAX_PATH_CHARS,
  OBSERVE_ENV_NAME_PATTERN,
  OBSERVE_MAX_ENV_NAMES,
  OBSERVE_MAX_EXTENSION_CHARS,
  OBSERVE_MAX_EXTENSIONS,
  OBSERVE_MAX_HANDLE_CHARS,
  OBSERVE_MAX_LIST_BYTES,
  OBSERVE_MAX_LIST_DEPTH,
  OBSERVE_MAX_LIST_ENTRIES,
  OBSERVE_MAX_PROCESSES,
  OBSERVE_MAX_READ_BYTES,
} from '../limits.ts'
import { boundedInteger } from './common.ts'

// ── Pieces ───────────────────────────────────────────────────────────────────────────────

/** Sidecar contract only: the token's declared names, sent by the API (comma-separated). */
export const OBSERVE_ENV_HEADER = 'Termkeep-Observe-Env'

export const EnvironmentName = v.pipe(
  v.string(),
  v.regex(OBSERVE_ENV_NAME_PATTERN, 'environment variable names are an upper-case letter, then up to 127 of [A-Z0-9_]'),
)

/** An opaque handle's id: only the broker that issued it can read it. */
export const HandleId = v.pipe(
  v.string(),
  v.minLength(1, 'a handle id is not empty'),
  v.maxLength(OBSERVE_MAX_HANDLE_CHARS),
  v.description("an opaque handle id issued by this terminal's observation routes"),
)
export const Handle = v.object({ id: HandleId })
export type Handle = v.InferOutput<typeof Handle>

const hasParent = (path: string) => path.split('/').includes('..')

/** A path relative to a root: not absolute, no `..` segment, no NUL. */
export const RelativePath = v.pipe(
  v.string(),
  v.minLength(1, 'a relative path is not empty'),
  v.maxLength(MAX_PATH_CHARS),
  v.check((p) => !p.includes('\0'), 'paths cannot contain NUL'),
  v.check((p) => !p.startsWith('/'), 'the path must be relative (no leading /)'),
  v.check((p) => !hasParent(p), 'the path must not contain ..'),
  v.description('relative to its root: no leading /, no .. segment, no NUL'),
)

/** Path data from a provider's own records: absolute, no `..` segment, no NUL. */
export const ProviderPath = v.pipe(
  v.string(),
  v.maxLength(MAX_PATH_CHARS),
  v.check((p) => !p.includes('\0'), 'paths cannot contain NUL'),
  v.check((p) => p.startsWith('/'), 'a provider path is absolute'),
  v.check((p) => !hasParent(p), 'the path must not contain ..'),
  v.description("an absolute path from the provider's own records (no .. segment, no NUL); accepted only beneath its declared root"),
)

const EXTENSION = `\\.[A-Za-z0-9_.+~-]{1,${OBSERVE_MAX_EXTENSION_CHARS - 1}}`
/** A file name suffix such as `.jsonl`. */
export const Extension = v.pipe(
  v.string(),
  v.maxLength(OBSERVE_MAX_EXTENSION_CHARS, `an extension is at most ${OBSERVE_MAX_EXTENSION_CHARS} characters`),
  v.regex(new RegExp(`^${EXTENSION}$`), 'an extension is "." followed by letters, digits or _.+~-'),
)

const HomeBeneath = v.object({ homeRelative: RelativePath })
const MaxReadBytes = boundedInteger('maxBytes', 1, OBSERVE_MAX_READ_BYTES)

export const ObservationCapability = v.picklist(['process-observation', 'filesystem-observation', 'agent-journal'])
export type ObservationCapability = v.InferOutput<typeof ObservationCapability>

/** Pure: which capabilities a token's grants give. */
export function capabilitiesOf(grants: ReadonlySet<Grant>): ObservationCapability[] {
  const given: ObservationCapability[] = []
  if (grants.has('observe:process')) given.push('process-observation')
  if (grants.has('observe:files')) given.push('filesystem-observation')
  if (grants.has('observe:journal')) given.push('agent-journal')
  return given
}

/** Pure: the names of `wanted` that `declared` lacks, in order. */
export function undeclaredNames(wanted: readonly string[], declared: ReadonlySet<string>): string[] {
  return wanted.filter((name) => !declared.has(name))
}

// ── Context ──────────────────────────────────────────────────────────────────────────────

export const ForegroundProcess = v.object({
  executableName: v.string(),
  /** argv after argv[0], bounded. */
  arguments: v.optional(v.array(v.string())),
  /** ISO 8601. */
  startedAt: v.optional(v.string()),
})

export const TtyFact = v.object({
  /** `major:minor` of the PTY's slave device. */
  deviceId: v.string(),
  /** As `ps` shows it, e.g. `pts/3`. */
  deviceName: v.optional(v.string()),
})

/** What the sidecar knows; the API adds the capabilities of the caller's grants. */
export const ObservationFacts = v.object({
  terminal: Handle,
  project: Handle,
  environment: Handle,
  /** The foreground process (the leader of the PTY's foreground process group). */
  process: Handle,
  foreground: ForegroundProcess,
  /** Present only when the foreground process's controlling terminal is this PTY's slave. */
  tty: v.optional(TtyFact),
})
export type ObservationFacts = v.InferOutput<typeof ObservationFacts>

export const ObservationContext = v.object({ ...ObservationFacts.entries, capabilities: v.array(ObservationCapability) })
export type ObservationContext = v.InferOutput<typeof ObservationContext>

// ── Processes ────────────────────────────────────────────────────────────────────────────

export const ProcessSnapshot = v.object({
  handle: Handle,
  executableName: v.string(),
  /** A fact (for joining a provider's own registry), never authority. */
  pid: v.number(),
  parentPid: v.number(),
  /** The kernel's state letter (R, S, D, T, Z, …), as `ps` shows it. */
  state: v.string(),
  /** In the PTY's foreground process group. */
  foreground: v.boolean(),
  arguments: v.optional(v.array(v.string())),
  startedAt: v.optional(v.string()),
  /** `~/…` beneath the environment's home, or `$NAME/…` beneath a declared variable's value;
   * absent elsewhere (a raw absolute path is never shown). */
  cwd: v.optional(v.string()),
})
export type ProcessSnapshot = v.InferOutput<typeof ProcessSnapshot>

export const DescendantsRequest = v.object({})
export const Descendants = v.object({ processes: v.array(ProcessSnapshot), truncated: v.boolean() })
export type Descendants = v.InferOutput<typeof Descendants>

/** A process is named by its handle, or by a whole snapshot (its `handle` counts). */
const ProcessRef = v.union([Handle, v.looseObject({ handle: Handle })])
export const OpenFilesRequest = v.object({
  processes: v.pipe(v.array(ProcessRef), v.maxLength(OBSERVE_MAX_PROCESSES, `at most ${OBSERVE_MAX_PROCESSES} processes`)),
  /** `writable` also reports read-write files; `readable` also reports read-write files. */
  access: v.picklist(['readable', 'writable']),
})
export type OpenFilesRequest = v.InferOutput<typeof OpenFilesRequest>

export const OpenFile = v.object({
  handle: Handle,
  /** For display only: `~/…` or `$NAME/…`. */
  path: v.string(),
  access: v.picklist(['readable', 'writable', 'read-write']),
})
export const OpenFiles = v.object({ files: v.array(OpenFile), truncated: v.boolean() })
export type OpenFiles = v.InferOutput<typeof OpenFiles>

export const EnvironmentRequest = v.object({
  names: v.pipe(
    v.array(EnvironmentName),
    v.minLength(1, 'name at least one variable'),
    v.maxLength(OBSERVE_MAX_ENV_NAMES, `at most ${OBSERVE_MAX_ENV_NAMES} names`),
  ),
})
/** Names that are not set (or whose value is too long to be a fact) are absent. */
export const EnvironmentValues = v.object({ environment: v.record(v.string(), v.string()) })
export type EnvironmentValues = v.InferOutput<typeof EnvironmentValues>

// ── Files ────────────────────────────────────────────────────────────────────────────────

export const MaybeHandle = v.object({ handle: v.nullable(Handle) })
export type MaybeHandle = v.InferOutput<typeof MaybeHandle>
export const MaybePath = v.object({ path: v.nullable(v.string()) })
export type MaybePath = v.InferOutput<typeof MaybePath>

/** A directory beneath the home, never the home itself (`.`, `./`): a root is one program's
 * directory (`.codex`), not a walk over the user's whole home. */
const DirectoryBeneathHome = v.pipe(
  RelativePath,
  v.check(
    (p) => p.split('/').some((segment) => segment !== '' && segment !== '.'),
    'the home itself is not a root: name a directory beneath it (such as .codex)',
  ),
)

export const ResolveHomeDirectory = v.object({ relativePath: DirectoryBeneathHome, beneath: v.optional(HomeBeneath) })
export const ResolveDirectoryRelativeToEnvironment = v.object({
  relativePath: RelativePath,
  environmentVariable: EnvironmentName,
  beneathRelative: v.optional(RelativePath),
})
export const ResolveRelativeToEnvironment = v.object({
  relativePath: RelativePath,
  environmentVariable: EnvironmentName,
  extension: v.optional(Extension),
})
export const ResolvePathUnderEnvironment = v.object({
  providerPath: ProviderPath,
  environmentVariable: EnvironmentName,
  beneathRelative: v.optional(RelativePath),
  extension: v.optional(Extension),
})
export const EnvironmentRelativePath = v.object({
  handle: Handle,
  environmentVariable: EnvironmentName,
  beneathRelative: v.optional(RelativePath),
})
export const ResolveHomeRelative = v.object({
  relativePath: RelativePath,
  beneath: v.optional(HomeBeneath),
  extension: v.optional(Extension),
})
export const ResolvePathUnderHome = v.object({ providerPath: ProviderPath, beneath: HomeBeneath, extension: v.optional(Extension) })
export const HomeRelativePath = v.object({ handle: Handle, beneath: HomeBeneath })
export const CanonicalFile = v.object({ handle: Handle, beneath: v.optional(HomeBeneath), extension: v.optional(Extension) })
export const HandleOnly = v.object({ handle: Handle })

export const FileStat = v.object({
  handle: Handle,
  kind: v.literal('file'),
  size: v.number(),
  /** ISO 8601. */
  modifiedAt: v.optional(v.string()),
})
export const MaybeStat = v.object({ stat: v.nullable(FileStat) })
export type MaybeStat = v.InferOutput<typeof MaybeStat>

/** Every one is required: discovery is always bounded by the caller's own limits too. */
export const ListOptions = v.object({
  extensions: v.pipe(
    v.array(Extension),
    v.minLength(1, 'give at least one extension'),
    v.maxLength(OBSERVE_MAX_EXTENSIONS, `at most ${OBSERVE_MAX_EXTENSIONS} extensions`),
  ),
  /** Directory nesting below the root; 0 is the root itself. */
  maxDepth: boundedInteger('maxDepth', 0, OBSERVE_MAX_LIST_DEPTH),
  maxEntries: boundedInteger('maxEntries', 1, OBSERVE_MAX_LIST_ENTRIES),
  /** The listed files' sizes, summed. */
  maxBytes: boundedInteger('maxBytes', 1, OBSERVE_MAX_LIST_BYTES),
})
export type ListOptions = v.InferOutput<typeof ListOptions>
export const ListDirectory = v.object({ root: Handle, ...ListOptions.entries })

export const DiscoveredFile = v.object({
  handle: Handle,
  /** Relative to the root, never escaping it. */
  relativePath: v.string(),
  size: v.number(),
  modifiedAt: v.optional(v.string()),
})
/** Oldest modification first (ties by path), so `entries.at(-1)` is the newest; a limit that
 * left files out keeps the newest ones and says `truncated`. */
export const DirectoryListing = v.object({ entries: v.array(DiscoveredFile), truncated: v.boolean() })
export type DirectoryListing = v.InferOutput<typeof DirectoryListing>

export const ReadRequest = v.object({ handle: Handle, maxBytes: MaxReadBytes })
/** The file's first `maxBytes` bytes (base64); `truncated` when it has more. */
export const FileBytes = v.object({ data: v.string(), size: v.number(), truncated: v.boolean() })
export type FileBytes = v.InferOutput<typeof FileBytes>
export const ReadJsonLineRequest = v.object({ handle: Handle, maxBytes: MaxReadBytes, position: v.picklist(['first', 'last']) })
/** Parsed JSON, or null when the file (or line) is not valid JSON within `maxBytes`. */
export const JsonValue = v.object({ value: v.nullable(v.unknown()) })
export type JsonValue = v.InferOutput<typeof JsonValue>

// ── Streams ──────────────────────────────────────────────────────────────────────────────

const QueryInteger = (min: number, max: number, name: string) =>
  v.pipe(
    v.string(),
    v.regex(/^\d{1,16}$/, `${name} is a non-negative integer`),
    v.transform(Number),
    v.minValue(min, `${name} is at least ${min}`),
    v.maxValue(max, `${name} is at most ${max}`),
  )

export const WatchDirectoryQuery = v.object({
  root: HandleId,
  /** Comma-separated, e.g. `.jsonl,.json` (split with extensionList). */
  extensions: v.pipe(
    v.string(),
    v.regex(
      new RegExp(`^${EXTENSION}(,${EXTENSION}){0,${OBSERVE_MAX_EXTENSIONS - 1}}$`),
      `extensions is a comma-separated list of 1–${OBSERVE_MAX_EXTENSIONS} suffixes such as .jsonl`,
    ),
  ),
  maxDepth: QueryInteger(0, OBSERVE_MAX_LIST_DEPTH, 'maxDepth'),
  maxEntries: QueryInteger(1, OBSERVE_MAX_LIST_ENTRIES, 'maxEntries'),
  maxBytes: QueryInteger(1, OBSERVE_MAX_LIST_BYTES, 'maxBytes'),
})

/** Pure: WatchDirectoryQuery's `extensions` as a list. */
export function extensionList(extensions: string): string[] {
  return extensions.split(',')
}

/**
 * Where a `follow` reader stopped: every follow event's `id`, sent back as `after` (or as
 * Last-Event-ID) to read on from exactly there. `c1.<offset>.<file>.<tail>.<tag>`: the byte offset
 * in the file being read, a keyed digest of that file's identity (so a cursor from before a
 * rotation is answered with `replace`), one of the bytes just before the offset (so a rewrite in
 * place is answered with `truncate`), and a tag that binds it to its handle. Opaque otherwise.
 */
export const FollowCursor = v.pipe(
  v.string(),
  v.regex(
    /^c1\.\d{1,16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{22}$/,
    'a follow cursor is the id of a follow event, as it came',
  ),
  v.description('the `id` of the last follow event applied: the stream goes on right after it'),
)

export const FollowFileQuery = v.object({
  handle: HandleId,
  /** Lowered to OBSERVE_MAX_FOLLOW_CHUNK_BYTES; default that. */
  maxChunkBytes: v.optional(QueryInteger(1, Number.MAX_SAFE_INTEGER, 'maxChunkBytes')),
  /** Resume after this cursor (a Last-Event-ID header wins over it); absent: from offset 0. */
  after: v.optional(FollowCursor),
})

/** An EventSource that reconnects sends the id of the last event it got. */
export const FollowHeaders = v.object({ 'last-event-id': v.optional(v.union([v.literal(''), FollowCursor])) })

/** Pure: where a follow resumes: a Last-Event-ID header (what an EventSource sends when it
 * reconnects to the URL it started with) wins over the `after` of that URL. */
export function followResume(after: string | undefined, lastEventId: string | undefined): string | undefined {
  return lastEventId === undefined || lastEventId === '' ? after : lastEventId
}

/** One `follow` event's data; the event name is the chunk type and the event id its cursor.
 * `truncate` and `replace` restart the content at `offset` 0 (their bytes may be empty);
 * `append` continues it. */
export const FollowChunk = v.object({ offset: v.number(), bytes: v.string() })
export type FollowChunk = v.InferOutput<typeof FollowChunk>
export const FOLLOW_EVENTS = ['append', 'truncate', 'replace'] as const
