/**
 * The sidecar's observation routes (contract: schema/wire/observation.ts), under the public
 * paths. The API has checked the token's grants and sends its declared environment names in
 * OBSERVE_ENV_HEADER; everything else — the live terminal, its incarnation, every handle, every
 * path — is re-derived here from the terminal and the filesystem.
 */
import { Hono, type Context } from 'hono'
import * as v from 'valibot'
import { TermkeepError } from '../../schema/errors.ts'
import { OBSERVE_MAX_DECLARED_ENV } from '../../schema/limits.ts'
import { SessionId, TerminalId } from '../../schema/wire/common.ts'
import {
  EnvironmentName,
  extensionList,
  FollowCursor,
  FollowFileQuery,
  followResume,
  OBSERVE_ENV_HEADER,
  WatchDirectoryQuery,
} from '../../schema/wire/observation.ts'
import { OBSERVATION_OPERATIONS, type ObservationOperationName } from '../../schema/wire/observation-operations.ts'
import { RawJson, type SseEvent } from '../../common/sse.ts'
import { sseResponse } from '../http/sse.ts'
import { jsonBody, parse } from '../http/validate.ts'
import type { TerminalHost } from '../terminals/host.ts'
import { FollowCursors } from './cursor.ts'
import { FileFollower } from './follow.ts'
import { HandleCodec } from './handles.ts'
import { gone, listDirectory, watchDirectory } from './listing.ts'
import { ObservedTerminal, handleInvalid } from './observed.ts'
import { context, descendants, environment, openFiles } from './processes.ts'
import { readFile, readJson, readJsonLine } from './reading.ts'
import * as resolve from './resolve.ts'
import { watching } from './watchers.ts'

type Operation = (view: ObservedTerminal, request: never, signal: AbortSignal) => Promise<unknown>

const OPERATIONS: Record<ObservationOperationName, Operation> = {
  descendants: (view) => descendants(view),
  openFiles,
  environment,
  resolveHomeDirectory: resolve.resolveHomeDirectory,
  resolveDirectoryRelativeToEnvironment: resolve.resolveDirectoryRelativeToEnvironment,
  resolveRelativeToEnvironment: resolve.resolveRelativeToEnvironment,
  resolvePathUnderEnvironment: resolve.resolvePathUnderEnvironment,
  environmentRelativePath: resolve.environmentRelativePath,
  resolveHomeRelative: resolve.resolveHomeRelative,
  resolvePathUnderHome: resolve.resolvePathUnderHome,
  homeRelativePath: resolve.homeRelativePath,
  canonicalFile: resolve.canonicalFile,
  realpath: resolve.realpathOf,
  stat: resolve.statOf,
  listDirectory,
  read: readFile,
  readJson,
  readJsonLine,
}

const Declared = v.pipe(
  v.optional(v.string(), ''),
  v.transform((list) => (list === '' ? [] : list.split(','))),
  v.array(EnvironmentName),
  v.maxLength(OBSERVE_MAX_DECLARED_ENV),
)

export function observationRoutes(host: TerminalHost, secret: string): Hono {
  const codec = new HandleCodec(secret)
  const cursors = new FollowCursors(secret)
  const base = '/v1/sessions/:sid/terminals/:tid/observation'

  async function view(c: Context): Promise<ObservedTerminal> {
    const sid = parse(SessionId, c.req.param('sid'), 'request/invalid')
    const tid = parse(TerminalId, c.req.param('tid'), 'terminal/invalid-id')
    const declared = new Set(parse(Declared, c.req.header(OBSERVE_ENV_HEADER), 'request/invalid'))
    return ObservedTerminal.of(await host.live(sid, tid), declared, codec)
  }

  const app = new Hono()
  app.get(base, async (c) => c.json(await context(await view(c))))

  app.get(`${base}/files/watchDirectory`, async (c) => {
    const query = parse(WatchDirectoryQuery, c.req.query())
    const observed = await view(c)
    const options = { ...query, extensions: extensionList(query.extensions), root: { id: query.root } }
    return sseResponse((signal) => watchDirectory(observed, options, signal), c.req.raw.signal)
  })

  app.get(`${base}/files/follow`, async (c) => {
    const query = parse(FollowFileQuery, c.req.query())
    const header = c.req.header('last-event-id') || undefined
    const after = followResume(query.after, header === undefined ? undefined : parse(FollowCursor, header))
    const observed = await view(c)
    const identity = codec.open(query.handle, observed.binding, ['f'])
    if (!identity) throw handleInvalid('file handle')
    const point = after === undefined ? undefined : cursors.open(query.handle, after)
    const release = watching(observed.terminal)
    let follower: FileFollower
    try {
      follower = point
        ? await FileFollower.resume(identity, point, query.maxChunkBytes)
        : await FileFollower.open(identity, query.maxChunkBytes)
    } catch (error) {
      release()
      throw error
    }
    return sseResponse(async function* (signal): AsyncGenerator<SseEvent, void, void> {
      try {
        yield { comment: 'following' } // the answer goes out now, even for an empty file
        for await (const chunk of follower.chunks(signal, () => gone(observed), [observed.terminal.changes])) {
          if (chunk === null) yield { comment: 'heartbeat' }
          else {
            const id = cursors.mint(query.handle, chunk.file, chunk.offset + chunk.bytes.length, chunk.tail)
            yield { event: chunk.type, id, data: new RawJson(`{"offset":${chunk.offset},"bytes":"${chunk.bytes.toString('base64')}"}`) }
          }
        }
      } finally {
        await follower.close()
        release()
      }
    }, c.req.raw.signal)
  })

  app.post(`${base}/:group/:operation`, async (c) => {
    const name = c.req.param('operation') as ObservationOperationName
    const operation = Object.hasOwn(OBSERVATION_OPERATIONS, name) ? OBSERVATION_OPERATIONS[name] : undefined
    if (!operation || operation.group !== c.req.param('group')) {
      throw new TermkeepError('route/not-found', `no observation operation ${c.req.param('group')}/${name}`)
    }
    const request = parse(operation.request, await jsonBody(c.req.raw))
    return c.json(await OPERATIONS[name](await view(c), request as never, c.req.raw.signal))
  })
  return app
}
