/** The observation tools' pure parts: names generated from the seed's methods, follow events
 * shown as merged chunks (text when UTF-8, base64 otherwise), and the table against its routes. */
import { describe, expect, it } from 'vitest'
import { OBSERVATION_OPERATIONS } from '../../schema/wire/observation-operations.ts'
import { followChunks, OBSERVATION_TOOLS, observeToolName } from './observation.ts'
import { toBase64 } from '../../common/bytes.ts'
import { shownBytes } from './text.ts'

const b64 = (text: string | Uint8Array) => Buffer.from(text).toString('base64')
const event = (type: string, offset: number, bytes: string | Uint8Array, id = `c${offset}`) => ({
  event: type,
  id,
  data: JSON.stringify({ offset, bytes: b64(bytes) }),
})

describe('observation tools', () => {
  it('are one per operation of OBSERVATION_OPERATIONS, named from the seed method, with the context and follow', () => {
    expect(observeToolName('readJsonLine')).toBe('observe_read_json_line')
    expect(observeToolName('resolveDirectoryRelativeToEnvironment')).toBe('observe_resolve_directory_relative_to_environment')
    const names = OBSERVATION_TOOLS.map((t) => t.name)
    expect(names).toEqual(['observe_context', ...Object.keys(OBSERVATION_OPERATIONS).map(observeToolName), 'observe_follow'])
    // Each body schema is the route's own: the read tool requires what ReadRequest requires.
    expect(OBSERVATION_TOOLS.find((t) => t.name === 'observe_read')!.input.schema.required).toEqual(['sid', 'tid', 'handle', 'maxBytes'])
    expect(OBSERVATION_TOOLS.find((t) => t.name === 'observe_list_directory')!.input.schema.required).toEqual([
      'sid',
      'tid',
      'root',
      'extensions',
      'maxDepth',
      'maxEntries',
      'maxBytes',
    ])
  })

  it('merge the appends that continue a chunk, and start a new chunk at truncate, replace or a gap', () => {
    const { chunks } = followChunks([
      event('append', 0, 'one\n'),
      event('append', 4, 'two\n'),
      event('truncate', 0, ''),
      event('append', 0, 'three\n'),
      event('replace', 0, 'four\n'),
      event('append', 5, 'five\n'),
      event('append', 99, 'a gap cannot happen, and is not papered over\n'),
    ])
    expect(chunks).toEqual([
      { type: 'append', offset: 0, length: 8, encoding: 'utf8', text: 'one\ntwo\n' },
      { type: 'truncate', offset: 0, length: 6, encoding: 'utf8', text: 'three\n' },
      { type: 'replace', offset: 0, length: 10, encoding: 'utf8', text: 'four\nfive\n' },
      { type: 'append', offset: 99, length: 45, encoding: 'utf8', text: 'a gap cannot happen, and is not papered over\n' },
    ])
  })

  it('show bytes that are not UTF-8 as base64, and say so; a character split across events is joined', () => {
    const euro = Buffer.from('€') // three bytes
    expect(followChunks([event('append', 0, euro.subarray(0, 1)), event('append', 1, euro.subarray(1))]).chunks).toEqual([
      { type: 'append', offset: 0, length: 3, encoding: 'utf8', text: '€' },
    ])
    const binary = new Uint8Array([0xff, 0x00, 0xc3])
    expect(shownBytes(binary)).toEqual({ encoding: 'base64', bytes: b64(binary) })
    expect(shownBytes(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]))).toEqual({ encoding: 'utf8', text: '\ufeffA' })
    const large = new Uint8Array(200_000).map((_, i) => i % 256)
    expect(toBase64(large)).toBe(b64(large))
  })
})
