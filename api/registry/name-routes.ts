/**
 * Names people type (schema/wire/names.ts, docs/api.md#names): renaming a session, resolving a
 * `session[:terminal]` target to ids, and finding sessions and terminals by name. A terminal's
 * name is set where its title is (PUT and PATCH on the terminal: api/terminals/routes.ts).
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { FindQuery, FoundNames, ResolvedTarget, ResolveQuery } from '../../schema/wire/names.ts'
import { RenameSession, SessionEnvelope, SessionParams } from '../../schema/wire/registry.ts'
import { guard } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json } from '../openapi.ts'
import { validate } from '../validate.ts'
import { findNames, renameSession, resolveTarget } from '../../storage/registry/names.ts'

/** Knowing the ids and names of what the token can reach is part of listing any of it. */
const SEES = { anyOf: ['workspaces:read', 'terminals:control', 'terminals:display'] } as const

export const nameRoutes = new Hono<AppEnv>()
  .patch(
    '/v1/sessions/:sid',
    describeRoute({
      tags: ['sessions'],
      summary: 'Rename a session: a new title, a new name (null removes it), or both',
      description:
        'A name is what people type (`termkeep attach api`): a letter, then letters, digits, `.`, `_`, `-`, at most 64; unique across sessions and not the id of another session (409 `name/conflict`).',
      responses: {
        200: json(SessionEnvelope),
        409: error('the name is taken (`name/conflict`)'),
        404: error('`session/not-found`'),
      },
    }),
    guard('sessions:write'),
    validate('param', SessionParams),
    validate('json', RenameSession),
    async (c) => c.json({ session: await renameSession(c.var.deps.db, c.var.auth, c.req.valid('param').sid, c.req.valid('json')) }),
  )
  .get(
    '/v1/resolve',
    describeRoute({
      tags: ['sessions'],
      summary: 'A target people type (`api`, `api:build`, `ses_…:2`) as ids',
      description:
        'Each part is an id or a name; an id wins. A part that is the id of one and the name of another is 409 `name/ambiguous`; one that names nothing the token may see is 404 `session/not-found` or `terminal/not-found` {name}. Without a terminal part, the terminal is the session’s newest live one (null when it has none).',
      responses: {
        200: json(ResolvedTarget),
        404: error('`session/not-found`, `terminal/not-found`'),
        409: error('`name/ambiguous`'),
      },
    }),
    guard(SEES),
    validate('query', ResolveQuery),
    async (c) => c.json(await resolveTarget(c.var.deps.db, c.var.auth, c.req.valid('query').target)),
  )
  .get(
    '/v1/find',
    describeRoute({
      tags: ['sessions'],
      summary: 'Sessions and terminals whose id, name or title holds `q` (any case), newest first',
      responses: { 200: json(FoundNames) },
    }),
    guard(SEES),
    validate('query', FindQuery),
    async (c) => c.json(await findNames(c.var.deps.db, c.var.auth, c.req.valid('query').q)),
  )
