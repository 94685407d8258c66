/**
 * `GET /v1/hosts`: the hosts sharing this database, each with whether it is up (schema/wire/hosts.ts).
 * Hosts are confined as workspaces are: a token bound to some sessions sees only the hosts its
 * sessions live on.
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { HostList } from '../../schema/wire/hosts.ts'
import { sessionHosts } from '../../storage/hosts.ts'
import { guard } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { json } from '../openapi.ts'

export const hostRoutes = new Hono<AppEnv>().get(
  '/v1/hosts',
  describeRoute({
    tags: ['hosts'],
    summary: 'The hosts on this database: id, name, URL, version, capacity, whether it is up',
    description:
      'A host is up while its newest sidecar generation runs and its heartbeat (every 10 s) is younger than 30 s. A token bound to some sessions sees only the hosts of those sessions.',
    responses: { 200: json(HostList) },
  }),
  guard('workspaces:read'),
  async (c) => {
    const hosts = await c.var.fleet.hosts()
    const { sessions } = c.var.auth
    if (sessions === 'all') return c.json({ hosts })
    const visible = new Set(await sessionHosts(c.var.deps.db, [...sessions]))
    return c.json({ hosts: hosts.filter((h) => visible.has(h.id)) })
  },
)
