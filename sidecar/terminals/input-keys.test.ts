/** The memory of applied input keys: a repeat is not written, another batch under a key is
 * refused, a failed write is not remembered, and keys are forgotten by age and by count. */
import { describe, expect, it } from 'vitest'
import { TermkeepError } from '../../schema/errors.ts'
import { INPUT_KEY_MEMORY_MS, INPUT_KEYS_REMEMBERED } from '../../schema/limits.ts'
import { InputKeys } from './input-keys.ts'

const bytes = (text: string) => new TextEncoder().encode(text)

function harness() {
  let now = 1_000
  const keys = new InputKeys(() => now)
  const written: string[] = []
  const send = (key: string, text: string, principal = 'tok_a', attachment = 'a1') =>
    keys.apply(principal, attachment, key, bytes(text), () => void written.push(text))
  return { keys, written, send, advance: (ms: number) => (now += ms) }
}

describe('InputKeys', () => {
  it('writes a key once; a repeat of the same batch answers "already applied" without writing', () => {
    const { written, send } = harness()
    expect(send('k1', 'ls\r')).toBe(false)
    expect(send('k1', 'ls\r')).toBe(true)
    expect(send('k2', 'ls\r')).toBe(false)
    expect(written).toEqual(['ls\r', 'ls\r'])
  })

  it('refuses a key already applied to other bytes or from another attachment (422), writing nothing', () => {
    const { written, send } = harness()
    send('k1', 'ls\r')
    for (const repeat of [() => send('k1', 'rm -rf /\r'), () => send('k1', 'ls\r', 'tok_a', 'a2')]) {
      expect(repeat).toThrowError(TermkeepError)
      try {
        repeat()
      } catch (error) {
        expect((error as TermkeepError).code).toBe('terminal/idempotency-key-reused')
      }
    }
    expect(written).toEqual(['ls\r'])
  })

  it("keeps keys apart per principal: another token's key of the same name is its own", () => {
    const { written, send } = harness()
    send('k1', 'a', 'tok_a')
    expect(send('k1', 'a', 'tok_b')).toBe(false)
    expect(written).toEqual(['a', 'a'])
  })

  it('does not remember a write that failed, so its retry is written', () => {
    const { keys, written, send } = harness()
    expect(() =>
      keys.apply('tok_a', 'a1', 'k1', bytes('x'), () => {
        throw new TermkeepError('terminal/control-unavailable', 'read-only', { reason: 'read-only' })
      }),
    ).toThrowError('read-only')
    expect(send('k1', 'x')).toBe(false)
    expect(written).toEqual(['x'])
  })

  it('forgets keys after INPUT_KEY_MEMORY_MS, and the oldest beyond INPUT_KEYS_REMEMBERED', () => {
    const { keys, send, advance } = harness()
    send('old', 'x')
    advance(INPUT_KEY_MEMORY_MS - 1)
    expect(send('old', 'x')).toBe(true)
    advance(1)
    expect(send('old', 'x')).toBe(false) // forgotten: a new batch now
    for (let i = 0; i < INPUT_KEYS_REMEMBERED; i++) send(`k${i}`, 'y')
    expect(keys.size).toBe(INPUT_KEYS_REMEMBERED)
    expect(send('old', 'x')).toBe(false) // the oldest went first
    expect(send(`k${INPUT_KEYS_REMEMBERED - 1}`, 'y')).toBe(true)
  })
})
