/**
 * Command routes (schema/wire/commands.ts, docs/commands.md). Records and the text of ended
 * commands come from libSQL, so they answer for retired terminals and with the sidecar down; a run,
 * the live watch, a running command's text and the exact bytes go to the sidecar.
 *
 * Grants (docs/security.md): a command record (its line, directory, exit code) is what the screen
 * and the output show, so either grant reads it; its output text and bytes are output
 * (`terminals:output`); running one types into the terminal and answers its output
 * (`terminals:control` + `terminals:output`, as follow needs).
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import * as v from 'valibot'
import { TermkeepError } from '../../schema/errors.ts'
import { COMMAND_TEXT_MAX_BYTES, MAX_RUN_COMMAND_BYTES } from '../../schema/limits.ts'
import { AttachmentId } from '../../schema/wire/common.ts'
import {
  CommandOutput,
  CommandPage,
  CommandParams,
  CommandRecord,
  CommandRun,
  CommandsQuery,
  RunCommand,
} from '../../schema/wire/commands.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import { guard } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json, SIDECAR_DOWN, sidecarDownUnknown, sse } from '../openapi.ts'
import { lastEventId } from '../sse.ts'
import { relay } from '../terminals/routes.ts'
import { issuesTouch, validate } from '../validate.ts'
import { getCommand, listCommands, storedOutput } from '../../storage/commands.ts'

const tags = ['commands']
const C = '/v1/sessions/:sid/terminals/:tid/commands'
const READ = { anyOf: ['terminals:output', 'terminals:screen'] } as const
const NOT_FOUND = { 404: error('no such session, terminal or command (`terminal/not-found`, `command/not-found`)') }
const GONE = { 410: error('the terminal is retired or from an earlier sidecar (`terminal/unavailable`)') }
const RunHeaders = v.object({ 'termkeep-attachment': v.optional(AttachmentId) })
const WatchQuery = v.object({ after: v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'after is an event number')), '0') })

export const commandRoutes = new Hono<AppEnv>()
  .get(
    C,
    describeRoute({
      tags,
      summary: "The terminal's commands, oldest first: the newest `limit`, or those after `after` / before `before`",
      description:
        'From the database: works for retired terminals and with the sidecar down. `newest` is the highest command number recorded; page back with `before` = the first one returned.',
      responses: { 200: json(CommandPage), ...NOT_FOUND },
    }),
    guard(READ),
    validate('param', TerminalParams),
    validate('query', CommandsQuery),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      return c.json(await listCommands(c.var.deps.db, sid, tid, c.req.valid('query')))
    },
  )
  .post(
    C,
    describeRoute({
      tags,
      summary: "Run a command in the terminal's shell: typed at its prompt, answered when it ended",
      description: `The shell must wait at an empty prompt with termkeep's command marks (docs/commands.md), else 409 \`command/not-at-prompt\` {reason: \`no-marks\` | \`no-prompt\` | \`running\` | \`input-pending\` | \`busy\`}; the command is typed only when no other attachment (a person's) controls the terminal, else 409 \`terminal/control-unavailable\` — unless the request names the caller's own controlling attachment in \`Termkeep-Attachment\`. The answer: the command's record, its exit code, its output as plain text (the last ${COMMAND_TEXT_MAX_BYTES / 1024} KiB; \`omittedBytes\` before them), the shell's directory after it and its duration. A command still running after \`timeoutMs\` is answered with \`ended: false\` and goes on. A command is one line of at most ${MAX_RUN_COMMAND_BYTES} bytes: no NUL and no control character but tab (400 \`command/invalid\`, nothing typed).`,
      responses: {
        200: json(CommandRun),
        400: error('a bad command (`command/invalid`) or timeout (`request/invalid`); nothing was typed'),
        409: error('`command/not-at-prompt`, or a person controls the terminal (`terminal/control-unavailable`)'),
        ...NOT_FOUND,
        ...GONE,
        ...sidecarDownUnknown('Retry only after listing the commands (or watching them): the command may have been typed and started.'),
      },
    }),
    guard({ allOf: ['terminals:control', 'terminals:output'] }),
    validate('param', TerminalParams),
    validate('header', RunHeaders),
    validate('json', RunCommand, { code: (issues) => (issuesTouch(issues, ['command']) ? 'command/invalid' : 'request/invalid') }),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const from = { attachment: c.req.valid('header')['termkeep-attachment'], principal: c.var.auth.tokenId }
      return c.json(await (await c.var.fleet.forSession(sid)).runCommand(sid, tid, c.req.valid('json'), from))
    },
  )
  .get(
    `${C}/watch`,
    describeRoute({
      tags,
      summary: 'SSE: every command start and end after `after` (or Last-Event-ID), then live',
      description:
        'A `begin` event, then `start` (id 2n−1) and `end` (id 2n) per command n, each with the record; `closed` once the terminal’s output ended and every command in it was reported. A live terminal only (410 once retired: list the commands instead).',
      responses: { 200: sse('begin, then starts and ends', ['begin', 'start', 'end', 'closed']), ...NOT_FOUND, ...GONE, ...SIDECAR_DOWN },
    }),
    guard(READ),
    validate('param', TerminalParams),
    validate('query', WatchQuery),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const resume = lastEventId(c.req.header('last-event-id'))
      const after = resume ?? Number(c.req.valid('query').after)
      const header = resume === undefined ? undefined : String(resume)
      return relay(c, async (signal) => (await c.var.fleet.forSession(sid)).watchCommands(sid, tid, { after, lastEventId: header }, signal))
    },
  )
  .get(
    `${C}/:n`,
    describeRoute({ tags, summary: 'One command record (from the database)', responses: { 200: json(CommandRecord), ...NOT_FOUND } }),
    guard(READ),
    validate('param', CommandParams),
    async (c) => {
      const { sid, tid, n } = c.req.valid('param')
      return c.json(await getCommand(c.var.deps.db, sid, tid, n))
    },
  )
  .get(
    `${C}/:n/output`,
    describeRoute({
      tags,
      summary: "A command's output as plain text (its last 64 KiB)",
      description:
        'An ended command’s text is kept in the database (it outlives the terminal); a running one’s comes from the sidecar, so far. Escape sequences removed, carriage returns and line wraps applied as a terminal applies them.',
      responses: { 200: json(CommandOutput), ...NOT_FOUND },
    }),
    guard('terminals:output'),
    validate('param', CommandParams),
    async (c) => {
      const { sid, tid, n } = c.req.valid('param')
      const stored = await storedOutput(c.var.deps.db, sid, tid, n)
      if (stored) return c.json(stored)
      try {
        return c.json(await (await c.var.fleet.forSession(sid)).commandOutput(sid, tid, n))
      } catch (caught) {
        // The sidecar no longer holds it (retired, restarted, its host down): what the database has, so far nothing.
        if (!(caught instanceof TermkeepError) || caught.status === 500) throw caught
        return c.json({ n, state: 'running', text: '', omittedBytes: 0, outputBytes: 0 } satisfies CommandOutput)
      }
    },
  )
  .get(
    `${C}/:n/output.bin`,
    describeRoute({
      tags,
      summary: "A command's exact output bytes, from the journal (a live terminal only)",
      description:
        'The bytes between the output-start and end marks, streamed as they are in the journal (a running command: what it printed so far). 410 once the terminal is retired: its journal is gone; the text stays readable.',
      responses: {
        200: {
          description: 'the bytes',
          content: { 'application/octet-stream': { schema: { type: 'string' as const, format: 'binary' } } },
        },
        ...NOT_FOUND,
        ...GONE,
        ...SIDECAR_DOWN,
      },
    }),
    guard('terminals:output'),
    validate('param', CommandParams),
    async (c) => {
      const { sid, tid, n } = c.req.valid('param')
      await getCommand(c.var.deps.db, sid, tid, n)
      const upstream = await (await c.var.fleet.forSession(sid)).commandBytes(sid, tid, n, c.req.raw.signal)
      return new Response(upstream.body, { status: 200, headers: { 'content-type': 'application/octet-stream' } })
    },
  )
