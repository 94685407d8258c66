/** Handles: round trip, determinism, opacity, and every way a handle is refused. */
import { describe, expect, it } from 'vitest'
import { HandleCodec, type Binding, type HandleBody } from './handles.ts'

const SECRET = 'a-test-secret-of-enough-length'
const codec = new HandleCodec(SECRET)
const binding: Binding = { sessionId: 's1', terminalId: 't1', incarnation: '3.1700000000000' }
const file: HandleBody = {
  kind: 'f',
  path: '/home/alice/.codex/sessions/x.jsonl',
  dev: '2049',
  ino: '123',
  born: '0',
  root: '/home/alice',
  base: 'home',
}
const process: HandleBody = { kind: 'p', pid: 4242, startTicks: 987654 }

describe('HandleCodec', () => {
  it('opens what it minted, for the same binding and kind', () => {
    expect(codec.open(codec.mint(binding, file).id, binding, ['f'])).toEqual(file)
    expect(codec.open(codec.mint(binding, process).id, binding, ['p'])).toEqual(process)
    expect(new HandleCodec(SECRET).open(codec.mint(binding, file).id, binding, ['f', 'd'])).toEqual(file)
  })

  it('gives the same object the same id, and shows nothing of it', () => {
    const id = codec.mint(binding, file).id
    expect(codec.mint(binding, file).id).toBe(id)
    expect(codec.mint(binding, { ...file, ino: '124' }).id).not.toBe(id)
    // Built in another order (or with a stray field), it is still the same object.
    const reordered = {
      base: 'home',
      root: '/home/alice',
      born: '0',
      ino: '123',
      dev: '2049',
      path: file.kind === 'f' ? file.path : '',
      kind: 'f',
      extra: 1,
    }
    expect(new HandleCodec(SECRET).mint(binding, reordered as unknown as HandleBody).id).toBe(id)
    expect(id).toMatch(/^h1\.f\.[\w-]+\.[\w-]{43}$/)
    const decoded = Buffer.from(id.split('.')[2], 'base64url').toString('latin1')
    for (const secret of ['alice', 'codex', 'jsonl', '2049', 's1', 't1']) expect(decoded).not.toContain(secret)
  })

  it('refuses another session, terminal, incarnation, kind, or key', () => {
    const id = codec.mint(binding, file).id
    expect(codec.open(id, { ...binding, sessionId: 's2' }, ['f'])).toBeUndefined()
    expect(codec.open(id, { ...binding, terminalId: 't2' }, ['f'])).toBeUndefined()
    expect(codec.open(id, { ...binding, incarnation: '4.1700000000000' }, ['f'])).toBeUndefined()
    expect(codec.open(id, binding, ['d', 'p'])).toBeUndefined()
    expect(new HandleCodec(`${SECRET}-other`).open(id, binding, ['f'])).toBeUndefined()
  })

  it('refuses any change to the id', () => {
    const id = codec.mint(binding, file).id
    const [, , data, tag] = id.split('.')
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1)
    for (const bad of [
      `h1.d.${data}.${tag}`, // another kind letter under the same tag
      `h1.f.${flip(data, 5)}.${tag}`, // ciphertext (or IV) changed
      `h1.f.${flip(data, data.length - 2)}.${tag}`,
      `h1.f.${data}.${flip(tag, 3)}`,
      `h1.f.${data}x.${tag}`,
      `h2.f.${data}.${tag}`,
      `h1.f.${data}`,
      '',
      'x'.repeat(5000),
    ]) {
      expect(codec.open(bad, binding, ['f', 'd']), bad.slice(0, 20)).toBeUndefined()
    }
  })

  it('needs a secret long enough to key it', () => {
    expect(() => new HandleCodec('short')).toThrow(/too short/)
  })
})
