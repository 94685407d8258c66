/** Continuations: a round trip works only for the exact session, token and unaltered cursor. */
import { describe, expect, it } from 'vitest'
import { TermkeepError } from '../../schema/errors.ts'
import { SidecarClient } from '../../api/sidecar-client.ts'
import { openContinuation, signContinuation } from './next.ts'
import { parseAddress } from './read-text.ts'

const client = (secret: string) => new SidecarClient({ url: 'http://127.0.0.1:1', secret })
const binding = { sessionId: 's1', tokenId: 'tok_a' }
const continuation = { address: 'attachment:att_1', offset: 11, limit: 10, byte: 420 }

async function refused(run: Promise<unknown>): Promise<string> {
  try {
    await run
  } catch (error) {
    if (error instanceof TermkeepError) return error.code
    throw error
  }
  return 'accepted'
}

describe('readText continuations', () => {
  it('round-trips for the same session and token', async () => {
    const key = await client('a-long-enough-secret').signingKey('read-text')
    const next = await signContinuation(key, binding, continuation)
    expect(Object.keys(next)).toEqual(['cursor'])
    expect(await openContinuation(key, binding, next)).toEqual(continuation)
  })

  it('opens nothing for another session, another token, another key or an altered cursor', async () => {
    const key = await client('a-long-enough-secret').signingKey('read-text')
    const next = await signContinuation(key, binding, continuation)
    const otherDeployment = await client('another-long-secret').signingKey('read-text')
    const otherPurpose = await client('a-long-enough-secret').signingKey('something-else')
    const [payload, mac] = next.cursor.split('.')
    const cases = [
      () => openContinuation(key, { ...binding, sessionId: 's2' }, next),
      () => openContinuation(key, { ...binding, tokenId: 'tok_b' }, next),
      () => openContinuation(otherDeployment, binding, next),
      () => openContinuation(otherPurpose, binding, next),
      () => openContinuation(key, binding, { cursor: `${payload}x.${mac}` }),
      () => openContinuation(key, binding, { cursor: `${payload}.${mac.slice(1)}` }),
      () => openContinuation(key, binding, { cursor: `${payload}` }),
      () => openContinuation(key, binding, { cursor: '' }),
      () => openContinuation(key, binding, { cursor: `${payload}.${mac}.${mac}` }),
      () => openContinuation(key, binding, { cursor: `${payload}.!!` }),
    ]
    // Thunks, run one at a time: an eagerly created rejected promise would be reported unhandled.
    for (const open of cases) expect(await refused(open())).toBe('resource/not-found')
  })

  it('refuses to derive a key from a blank secret', () => {
    expect(() => client('').signingKey('read-text')).toThrow(/too short/)
  })
})

describe('parseAddress', () => {
  it.each([
    ['src/a.ts', { kind: 'file', path: 'src/a.ts' }],
    ['attachment:att_1', { kind: 'attachment', id: 'att_1' }],
    ['tool-result:tr_9', { kind: 'tool-result', id: 'tr_9' }],
    ['./attachment:x', { kind: 'file', path: './attachment:x' }],
    ['attachments:x', { kind: 'file', path: 'attachments:x' }],
  ])('%s', (address, expected) => expect(parseAddress(address)).toEqual(expected))
})
