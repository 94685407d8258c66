/** The pure pieces of the MCP server: argument layout, output as text, patterns, route paths. */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import type { TermkeepError } from '../../schema/errors.ts'
import { TextQuery } from '../../schema/wire/files.ts'
import { SendArgs } from '../../schema/wire/mcp.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import { Dispatcher, routePath } from './dispatch.ts'
import { toolInput } from './input.ts'
import { compilePattern, firstMatch } from './pattern.ts'
import { sendKeys } from './send.ts'
import { OutputTail, plainText } from './text.ts'

const codeOf = (f: () => unknown) => {
  try {
    f()
  } catch (error) {
    return (error as TermkeepError).code
  }
  return undefined
}

describe('toolInput', () => {
  const input = toolInput({
    params: TerminalParams,
    query: TextQuery,
    own: v.object({ history: v.optional(v.boolean(), false) }),
    defaults: { tid: () => 'made' },
  })

  it('merges the parts into one object schema; digit-only query strings are offered as integers', () => {
    expect(input.schema).toMatchObject({ type: 'object', additionalProperties: false, required: ['sid', 'path'] })
    expect(input.schema.properties).toMatchObject({
      offset: { type: 'integer', minimum: 1 },
      path: { type: 'string' },
      history: { type: 'boolean' },
    })
  })

  it('splits arguments back into parameters, query strings and own arguments, defaults filled in', () => {
    expect(input.split({ sid: 's', path: 'a.txt', offset: 3 })).toEqual({
      params: { sid: 's', tid: 'made' },
      query: { path: 'a.txt', offset: '3' },
      body: undefined,
      own: { history: false },
    })
  })

  it('refuses unknown arguments, unsafe path parameters and non-scalar query values', () => {
    expect(codeOf(() => input.split({ sid: 's', path: 'a', colour: 1 }))).toBe('request/invalid')
    expect(codeOf(() => input.split({ sid: '..', path: 'a' }))).toBe('request/invalid')
    expect(codeOf(() => input.split({ sid: 's', path: { a: 1 } }))).toBe('request/invalid')
    expect(codeOf(() => input.split({ sid: 's', path: 'a', offset: 1.5 }))).toBe('request/invalid')
    expect(codeOf(() => input.split({ sid: 's', path: 'a', history: 'yes' }))).toBe('request/invalid')
  })
})

describe('routePath', () => {
  it('encodes each parameter as one segment', () => {
    expect(routePath('/v1/sessions/:sid/files/text', { sid: 'a b/c' }, { path: 'x&y' })).toBe(
      '/v1/sessions/a%20b%2Fc/files/text?path=x%26y',
    )
  })
})

describe('plain text of terminal output', () => {
  it("drops escape sequences and controls, reads CRLF as a newline, keeps a redrawn line's last drawing", () => {
    expect(plainText('\x1b[31mred\x1b[0m\r\n\x1b]0;title\x07ok\r\n')).toBe('red\nok\n')
    expect(plainText('10%\r50%\r100%\ndone\x07\b\n')).toBe('100%\ndone\n')
    expect(plainText('a\tb')).toBe('a\tb')
  })

  it('keeps the newest bytes of a long output and counts the rest', () => {
    const tail = new OutputTail(8)
    for (const chunk of ['0123', '4567', '89ab', 'é!']) tail.add(new TextEncoder().encode(chunk))
    expect(tail.seenBytes).toBe(15)
    expect(tail.text()).toEqual({ text: '789abé!', omittedBytes: 7 })
    // A cut inside a UTF-8 sequence drops its orphaned bytes rather than show U+FFFD.
    const cut = new OutputTail(2)
    cut.add(new TextEncoder().encode('é!'))
    expect(cut.text()).toEqual({ text: '!', omittedBytes: 1 })
  })
})

describe('patterns', () => {
  it('are RE2: multiline anchors, no lookaround', () => {
    expect(firstMatch(compilePattern('^hi-\\d+$'), 'echo hi\nhi-42\n$ ')).toEqual({ match: 'hi-42', line: 'hi-42' })
    expect(firstMatch(compilePattern('(?i)READY'), 'is ready now')).toEqual({ match: 'ready', line: 'is ready now' })
    expect(codeOf(() => compilePattern('(?=a)b'))).toBe('request/invalid')
    expect(codeOf(() => compilePattern('(a)\\1'))).toBe('request/invalid')
  })

  it('match a catastrophic pattern in linear time', () => {
    const started = performance.now()
    expect(firstMatch(compilePattern('^(a+)+$'), `${'a'.repeat(5000)}!`)).toBeUndefined()
    expect(performance.now() - started).toBeLessThan(2000)
  })
})

describe('send_keys', () => {
  it('types in one request to the keys route, and never follows', async () => {
    const requests: string[] = []
    const call = new Dispatcher(
      async (request) => {
        requests.push(`${request.method} ${new URL(request.url).pathname} ${request.headers.get('termkeep-attachment')}`)
        expect(await request.json()).toEqual({ text: 'ls', keys: ['Enter', 'Up'], control: 'take' })
        return Response.json({ sent: 6, sequence: 9, tookControlFrom: 'person' })
      },
      'Bearer t',
      new AbortController().signal,
    )
    const own = v.parse(SendArgs, { text: 'ls', keys: ['Enter', 'Up'], takeControl: true })
    const result = await sendKeys.run({ params: { sid: 's1', tid: 't1' }, own, query: {}, body: undefined }, { call, need: () => {} })
    expect(requests).toEqual(['POST /v1/sessions/s1/terminals/t1/keys mcp'])
    expect(sendKeys.uses.flat().some((use) => use.path.endsWith('/follow'))).toBe(false)
    expect(JSON.parse((result.content[0] as { text: string }).text)).toMatchObject({ sent: 6, sequence: 9, tookControlFrom: 'person' })
  })

  it('checks its arguments before it sends anything', () => {
    expect(v.safeParse(SendArgs, { keys: ['Entr'] }).success).toBe(false)
    expect(v.safeParse(SendArgs, {}).success).toBe(false)
  })
})
