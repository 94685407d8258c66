/**
 * Hosts: the machines whose sidecars share one database (docs/hosts.md). Each has a stable id (its
 * sidecar's, kept in its data directory), a name, the URL the API reaches it at, its version and
 * capacity, and whether it is up: its newest generation's heartbeat is younger than HOST_LEASE_MS.
 *
 *   GET /v1/hosts        → HostList
 *   GET /v1/hosts/watch  SSE: `baseline` HostList, then `upsert` HostUpsert and `remove` HostRemoved
 */
import * as v from 'valibot'
import { HOST_ID_PATTERN, HOST_NAME_PATTERN } from '../limits.ts'

export const HostId = v.pipe(v.string(), v.regex(HOST_ID_PATTERN, 'host ids are 1–128 of [A-Za-z0-9_-]'))
export const HostName = v.pipe(v.string(), v.regex(HOST_NAME_PATTERN, 'host names are 1–63 of [A-Za-z0-9_.-]'))
/** What a request may name a host by: its id, or its name when no other host has it. */
export const HostSelector = v.pipe(v.string(), v.regex(/^[\w.-]{1,128}$/, 'a host id or name: 1–128 of [A-Za-z0-9_.-]'))

export const Host = v.object({
  id: HostId,
  name: v.string(),
  /** Where the API reaches its sidecar. */
  url: v.string(),
  version: v.string(),
  capacity: v.object({ cpus: v.number(), memoryBytes: v.number() }),
  /** Its newest generation answers HTTP, has not ended and beat within HOST_LEASE_MS. */
  up: v.boolean(),
  /** Its sidecar has claimed its generation but does not answer yet (not `up`). */
  starting: v.boolean(),
  /** When a host that is down was last known alive: its clean stop, else its last heartbeat;
   * null while up or starting, and for a host that never started. */
  downSince: v.nullable(v.number()),
  /** That generation's number and heartbeat (null before its first start completed). */
  generation: v.nullable(v.number()),
  heartbeatAt: v.nullable(v.number()),
  /** How many times its secret was rotated (`termkeep hosts rotate`); its secret is derived with it. */
  secretEpoch: v.number(),
  registeredAt: v.number(),
})
export type Host = v.InferOutput<typeof Host>

export const HostList = v.object({ hosts: v.array(Host) })
export type HostList = v.InferOutput<typeof HostList>

/** A hosts watch's increment: the host as it is now, and what happened to it. */
export const HostUpsert = v.object({ host: Host, change: v.picklist(['joined', 'changed', 'down', 'up']) })
export type HostUpsert = v.InferOutput<typeof HostUpsert>
export const HostRemoved = v.object({ hostId: HostId })
export type HostRemoved = v.InferOutput<typeof HostRemoved>
