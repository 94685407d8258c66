/**
 * Every JSON operation of terminal observation (schemas in observation.ts) with its grant, its
 * request and response schemas and the fields that name environment variables: the API mounts one
 * route per entry from this table, the sidecar dispatches by it, and other front ends (MCP tools)
 * can derive theirs.
 *
 *   POST /v1/sessions/:sid/terminals/:tid/observation/<group>/<operation>   {request} → {response}
 */
import type * as v from 'valibot'
import type { Grant } from '../grants.ts'
import {
  CanonicalFile,
  Descendants,
  DescendantsRequest,
  DirectoryListing,
  EnvironmentRelativePath,
  EnvironmentRequest,
  EnvironmentValues,
  FileBytes,
  HandleOnly,
  HomeRelativePath,
  JsonValue,
  ListDirectory,
  MaybeHandle,
  MaybePath,
  MaybeStat,
  OpenFiles,
  OpenFilesRequest,
  ReadJsonLineRequest,
  ReadRequest,
  ResolveDirectoryRelativeToEnvironment,
  ResolveHomeDirectory,
  ResolveHomeRelative,
  ResolvePathUnderEnvironment,
  ResolvePathUnderHome,
  ResolveRelativeToEnvironment,
} from './observation.ts'

export interface ObservationOperation {
  group: 'processes' | 'files'
  grant: Grant
  summary: string
  request: v.GenericSchema
  response: v.GenericSchema
  /** The request fields naming environment variables, which must be declared on the token. */
  environmentNames?: (request: Record<string, unknown>) => string[]
}

const variable = (request: Record<string, unknown>) => [request.environmentVariable as string]
const files = (summary: string, request: v.GenericSchema, response: v.GenericSchema, names?: ObservationOperation['environmentNames']) =>
  ({ group: 'files', grant: 'observe:files', summary, request, response, ...(names ? { environmentNames: names } : {}) }) as const

export const OBSERVATION_OPERATIONS = {
  descendants: {
    group: 'processes',
    grant: 'observe:process',
    summary: "Every process of the terminal's process tree: handle, name, pid, state, start time, cwd",
    request: DescendantsRequest,
    response: Descendants,
  },
  openFiles: {
    group: 'processes',
    grant: 'observe:process',
    summary: 'Regular files the given processes hold open (beneath the home or a declared variable), with handles',
    request: OpenFilesRequest,
    response: OpenFiles,
  },
  environment: {
    group: 'processes',
    grant: 'observe:process',
    summary: "Declared environment variables of the foreground process (or a descendant), never the host's",
    request: EnvironmentRequest,
    response: EnvironmentValues,
    environmentNames: (request) => request.names as string[],
  },
  resolveHomeDirectory: files('A directory root beneath the environment home, or null', ResolveHomeDirectory, MaybeHandle),
  resolveDirectoryRelativeToEnvironment: files(
    "A directory root beneath a declared variable's value, or null",
    ResolveDirectoryRelativeToEnvironment,
    MaybeHandle,
    variable,
  ),
  resolveRelativeToEnvironment: files(
    "A regular file beneath a declared variable's value, or null",
    ResolveRelativeToEnvironment,
    MaybeHandle,
    variable,
  ),
  resolvePathUnderEnvironment: files(
    "Canonicalizes a provider-record path beneath a declared variable's value: a file handle, or null",
    ResolvePathUnderEnvironment,
    MaybeHandle,
    variable,
  ),
  environmentRelativePath: files(
    "A file's path relative to a declared variable's value (a fact, not authority), or null",
    EnvironmentRelativePath,
    MaybePath,
    variable,
  ),
  resolveHomeRelative: files('A regular file beneath the environment home, or null', ResolveHomeRelative, MaybeHandle),
  resolvePathUnderHome: files(
    'Canonicalizes a provider-record path beneath a home-relative root: a file handle, or null',
    ResolvePathUnderHome,
    MaybeHandle,
  ),
  homeRelativePath: files("A file's path relative to a home-relative root (a fact, not authority), or null", HomeRelativePath, MaybePath),
  canonicalFile: files('The canonical regular file of a handle within optional constraints, or null', CanonicalFile, MaybeHandle),
  realpath: files('The canonical file handle, or null', HandleOnly, MaybeHandle),
  stat: files('Size and modification time of a file handle, or null', HandleOnly, MaybeStat),
  listDirectory: files('Regular files below a root with the given extensions, within the given limits', ListDirectory, DirectoryListing),
  read: files("A file's first maxBytes bytes (base64)", ReadRequest, FileBytes),
  readJson: files('A whole file parsed as JSON within maxBytes, or null', ReadRequest, JsonValue),
  readJsonLine: files('The first or last JSON Lines record within maxBytes, or null', ReadJsonLineRequest, JsonValue),
} as const satisfies Record<string, ObservationOperation>

export type ObservationOperationName = keyof typeof OBSERVATION_OPERATIONS
export type ObservationRequest<K extends ObservationOperationName> = v.InferOutput<(typeof OBSERVATION_OPERATIONS)[K]['request']>
export type ObservationResponse<K extends ObservationOperationName> = v.InferOutput<(typeof OBSERVATION_OPERATIONS)[K]['response']>

/** `/v1/sessions/:sid/terminals/:tid/observation/<group>/<operation>` for an operation. */
export function observationPath(name: ObservationOperationName): string {
  return `observation/${OBSERVATION_OPERATIONS[name].group}/${name}`
}
