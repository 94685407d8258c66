/** Token management (grant `admin` on a token bound to all sessions) and EventSource tickets (any
 * valid token). */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { TermkeepError } from '../../schema/errors.ts'
import { CreateToken, Revoked, Ticket, TicketRequest, TokenCreated, TokenList, TokenParams } from '../../schema/wire/tokens.ts'
import { AUTHENTICATED, guard } from '../auth/guard.ts'
import { mintTicket } from '../../storage/tickets.ts'
import { createToken, listTokens, revokeToken } from '../../storage/tokens.ts'
import type { AppEnv } from '../deps.ts'
import { error, json } from '../openapi.ts'
import { validate } from '../validate.ts'

export const tokenRoutes = new Hono<AppEnv>()
  .post(
    '/v1/tokens',
    describeRoute({
      tags: ['tokens'],
      summary: 'Mint a token for given sessions and grants; the secret is returned once and stored hashed',
      responses: { 201: json(TokenCreated, 'created') },
    }),
    guard('admin', { allSessions: true }),
    validate('json', CreateToken),
    async (c) => {
      const spec = c.req.valid('json')
      if (spec.expiresAt !== undefined && spec.expiresAt <= Date.now()) {
        throw new TermkeepError('request/invalid', 'expiresAt lies in the past')
      }
      return c.json(await createToken(c.get('deps').db, spec), 201)
    },
  )
  .get(
    '/v1/tokens',
    describeRoute({ tags: ['tokens'], summary: 'Active tokens, without secrets', responses: { 200: json(TokenList) } }),
    guard('admin', { allSessions: true }),
    async (c) => c.json({ tokens: await listTokens(c.get('deps').db) }),
  )
  .delete(
    '/v1/tokens/:id',
    describeRoute({
      tags: ['tokens'],
      summary: 'Revoke a token (and every ticket it minted)',
      responses: { 200: json(Revoked), 404: error('no such active token (`token/not-found`)') },
    }),
    guard('admin', { allSessions: true }),
    validate('param', TokenParams),
    async (c) => {
      const { id } = c.req.valid('param')
      if (!(await revokeToken(c.get('deps').db, id))) throw new TermkeepError('token/not-found', `no active token ${id}`)
      return c.json({ revoked: true as const })
    },
  )
  .post(
    '/v1/tickets',
    describeRoute({
      tags: ['tokens'],
      summary: 'A single-use, short-lived ticket for one SSE path, for EventSource (`?ticket=`)',
      description:
        "EventSource cannot send headers. Mint a ticket with your token, then open `path?ticket=…` within the TTL; it works once, on that path only, with your token's authority. Prefer fetch-based SSE with the Authorization header.",
      responses: { 201: json(Ticket, 'minted') },
    }),
    guard(AUTHENTICATED),
    validate('json', TicketRequest),
    async (c) => {
      const { path } = c.req.valid('json')
      const streams = c.get('streams')
      if (!streams.matches(path)) {
        throw new TermkeepError('request/invalid', `tickets open only SSE stream paths (${streams.paths.join(', ')}), not ${path}`)
      }
      const minted = await mintTicket(c.get('deps').db, c.get('auth').tokenId, path)
      return c.json({ ticket: minted.ticket, path, expiresAt: minted.expiresAt }, 201)
    },
  )
