/** Valibot at the sidecar's edge: a failed parse becomes the typed error the route names. */
import * as v from 'valibot'
import { TermkeepError, type ErrorCode } from '../../schema/errors.ts'
import { MAX_JSON_BODY_BYTES } from '../../schema/limits.ts'

export function parse<TSchema extends v.GenericSchema>(
  schema: TSchema,
  value: unknown,
  code: ErrorCode | ((failedKeys: string[]) => ErrorCode) = 'request/invalid',
): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, value)
  if (result.success) return result.output
  if (typeof code === 'function') code = code(result.issues.map((i) => String(i.path?.[0]?.key ?? '')))
  const message = result.issues.map((i) => (i.path?.length ? `${i.path.map((p) => p.key).join('.')}: ${i.message}` : i.message))
  throw new TermkeepError(code, message.join('; '))
}

/** A JSON body of at most MAX_JSON_BODY_BYTES (413 beyond), or `request/invalid` when it is not JSON. */
export async function jsonBody(request: Request): Promise<unknown> {
  const bytes = await rawBody(request, MAX_JSON_BODY_BYTES, 'request/too-large')
  try {
    return JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    throw new TermkeepError('request/invalid', 'the body is not JSON')
  }
}

/** A raw body of at most `limit` bytes; more is refused with `code` (413) without reading it all. */
export async function rawBody(request: Request, limit: number, code: ErrorCode): Promise<Uint8Array> {
  const tooLarge = () => new TermkeepError(code, `at most ${limit} bytes per request`, { limit })
  const declared = Number(request.headers.get('content-length') ?? 'NaN')
  if (declared > limit) throw tooLarge()
  // A declared length within the limit is the whole body (HTTP framing): read it in one go, which
  // @hono/node-server serves straight from the Node request. Check this before touching
  // `request.body`: that getter makes it build a full web Request around a stream of the Node
  // request, ~0.3 ms of every keystroke's input request here. Without a length, count while reading.
  if (Number.isInteger(declared)) return new Uint8Array(await request.arrayBuffer())
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const parts: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge()
    }
    parts.push(value)
  }
  return Buffer.concat(parts)
}
