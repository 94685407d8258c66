/**
 * OpenAPI helpers and the `/openapi.json` document. Routes describe themselves where they are
 * declared, so the document cannot drift from what validates:
 *
 *   describeRoute({ tags: ['workspaces'], summary: '…', responses: { 200: json(WorkspaceList) } })
 *   guard('workspaces:read')          // adds security, the grant and 401/403 (404 on :sid routes)
 *   validate('json', CreateWorkspace) // adds the request body / parameters from the same schema
 */
import type { Hono } from 'hono'
import { openAPIRouteHandler, resolver } from 'hono-openapi'
import type { GenericSchema } from 'valibot'
import { ErrorEnvelope } from '../schema/wire/common.ts'
import type { AppEnv } from './deps.ts'

/** A JSON response documented by its valibot schema. */
export function json(schema: GenericSchema, description = 'OK') {
  return { description, content: { 'application/json': { schema: resolver(schema) } } }
}

/** An SSE response; `events` names the event types in order of appearance. */
export function sse(description: string, events: readonly string[]) {
  return {
    description: `${description}\n\nEvents: ${events.map((e) => `\`${e}\``).join(', ')}. A \`: heartbeat\` comment keeps the stream alive.`,
    content: { 'text/event-stream': { schema: { type: 'string' as const } } },
  }
}

/** A typed error response `{error:{code,message}}`. */
export function error(description: string) {
  return { description, content: { 'application/json': { schema: resolver(ErrorEnvelope) } } }
}

/**
 * What a 503 `sidecar/unavailable` means, per route (docs/retrying.md). The API answers it when it
 * cannot reach the sidecar or the sidecar does not answer in time; in the second case a request
 * may have arrived and still be carried out when the sidecar resumes. So a route either changes
 * nothing before the sidecar answers (SIDECAR_DOWN: nothing was done) or its outcome is unknown
 * (sidecarDownUnknown), and then it says how a retry stays safe.
 */
export const SIDECAR_DOWN = {
  503: error(
    "the sidecar is unreachable or did not answer in time (`sidecar/unavailable`; with several hosts `host/unavailable`, naming the session's host in `host` and `hostName`). **Nothing was done**: this request changes nothing before the sidecar answers; retry it as is.",
  ),
}

export function sidecarDownUnknown(retry: string) {
  return {
    503: error(
      `the sidecar is unreachable or did not answer in time (\`sidecar/unavailable\`; with several hosts \`host/unavailable\`, naming the session's host). **The outcome is unknown**: the sidecar may have received the request and may still carry it out when it resumes. ${retry}`,
    ),
  }
}

export function openApiDocument(app: Hono<AppEnv>) {
  return openAPIRouteHandler(app, {
    // `/openapi.json` itself ends in an extension; document it like any route.
    excludeStaticFile: false,
    documentation: {
      openapi: '3.1.0',
      info: {
        title: 'termkeep',
        version: '1',
        description:
          'Keeps terminals: every byte recorded and replayable, every settled screen persisted. Every route but health and this document needs `Authorization: Bearer <token>` with the grant it names (`x-termkeep-grant`).',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    defaultValidationErrorResponse: {
      description: 'invalid request (`request/invalid`)',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['error'],
            properties: {
              error: {
                type: 'object',
                required: ['code', 'message'],
                properties: { code: { type: 'string', const: 'request/invalid' }, message: { type: 'string' } },
              },
            },
          },
        },
      },
    },
  })
}
