/**
 * `GET /v1/hosts`: the hosts sharing this database, each with whether it is up (schema/wire/hosts.ts),
 * and `GET /v1/hosts/watch`, the same as a stream of changes (watch.ts). Hosts are confined as
 * workspaces are: a token bound to some sessions sees only the hosts its sessions live on.
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { HostList } from '../../schema/wire/hosts.ts'
import { guard, openStream } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { json, sse } from '../openapi.ts'
import { sseResponse } from '../sse.ts'
import { visibleHosts, watchHosts } from './watch.ts'

const UP =
  'A host is up while its newest sidecar generation answers HTTP (from the end of its start, not from its registration; `starting` before) and its heartbeat (every 10 s) is younger than 30 s; a host that is down says since when (`downSince`: its clean stop, else its last heartbeat).'
const CONFINED = 'A token bound to some sessions sees only the hosts of those sessions.'

export const hostRoutes = new Hono<AppEnv>()
  .get(
    '/v1/hosts',
    describeRoute({
      tags: ['hosts'],
      summary: 'The hosts on this database: id, name, URL, version, capacity, whether it is up',
      description: `${UP} ${CONFINED}`,
      responses: { 200: json(HostList) },
    }),
    guard('workspaces:read'),
    async (c) => c.json({ hosts: await visibleHosts(c.var.fleet, c.var.deps.db, c.var.auth) }),
  )
  .get(
    '/v1/hosts/watch',
    describeRoute({
      tags: ['hosts'],
      summary: 'Hosts joining, changing, going down and coming back up, as SSE',
      description: `One \`baseline\` {hosts}, then \`upsert\` {host, change: joined | changed | down | up} and \`remove\` {hostId}, read every second. A heartbeat alone is no change. Events carry no id: a reconnect starts with a new baseline. ${UP} A host whose sidecar was killed is seen down once its heartbeat is 30 s old; one stopped cleanly, at once. ${CONFINED}`,
      responses: { 200: sse('baseline, then changes', ['baseline', 'upsert', 'remove']) },
    }),
    guard('workspaces:read'),
    async (c) => {
      const { deps, fleet, auth } = c.var
      const tuning = { maxPolls: deps.tuning?.registryWatchMaxPolls }
      return openStream(c, (options) => sseResponse((sink) => watchHosts(fleet, deps.db, auth, sink, tuning), options))
    },
  )
