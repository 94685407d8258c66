import { describe, expect, it } from 'vitest'
import { KEY_NAMES, keyBytes, typedInput } from './keys.ts'

describe('keyBytes (tmux send-keys names → xterm bytes)', () => {
  it.each([
    ['Enter', '\r'],
    ['Tab', '\t'],
    ['Space', ' '],
    ['Escape', '\x1b'],
    ['BSpace', '\x7f'],
    ['Up', '\x1b[A'],
    ['Down', '\x1b[B'],
    ['Right', '\x1b[C'],
    ['Left', '\x1b[D'],
    ['Home', '\x1b[H'],
    ['End', '\x1b[F'],
    ['PageUp', '\x1b[5~'],
    ['PPage', '\x1b[5~'],
    ['NPage', '\x1b[6~'],
    ['DC', '\x1b[3~'],
    ['IC', '\x1b[2~'],
    ['F1', '\x1bOP'],
    ['F4', '\x1bOS'],
    ['F5', '\x1b[15~'],
    ['F12', '\x1b[24~'],
    ['C-c', '\x03'],
    ['C-a', '\x01'],
    ['C-z', '\x1a'],
    ['c-d', '\x04'],
    ['^C', '\x03'],
    ['C-[', '\x1b'],
    ['C-@', '\x00'],
    ['C-Space', '\x00'],
    ['C-\\', '\x1c'],
    ['C-?', '\x7f'],
    ['M-x', '\x1bx'],
    ['M-Enter', '\x1b\r'],
    ['C-M-c', '\x1b\x03'],
    ['S-a', 'A'],
    ['S-Tab', '\x1b[Z'],
    ['BTab', '\x1b[Z'],
    ['S-Up', '\x1b[1;2A'],
    ['C-Left', '\x1b[1;5D'],
    ['M-Right', '\x1b[1;3C'],
    ['C-S-Up', '\x1b[1;6A'],
    ['C-Delete', '\x1b[3;5~'],
    ['S-F1', '\x1b[1;2P'],
    ['a', 'a'],
    ['é', 'é'],
    ['😀', '😀'],
  ])('%s', (name, bytes) => {
    expect(keyBytes(name)).toBe(bytes)
  })

  it('types text, then keys; arrows follow the application cursor mode', () => {
    expect(typedInput('ls', ['Enter', 'Up', 'C-c'], { applicationCursorKeys: false })).toBe('ls\r\x1b[A\x03')
    expect(typedInput('ls', ['Enter', 'Up', 'C-c'], { applicationCursorKeys: true })).toBe('ls\r\x1bOA\x03')
  })

  it('sends SS3 arrows, Home and End under application cursor mode, CSI with modifiers', () => {
    const app = { applicationCursorKeys: true }
    expect(keyBytes('Up', app)).toBe('\x1bOA')
    expect(keyBytes('Home', app)).toBe('\x1bOH')
    expect(keyBytes('C-Up', app)).toBe('\x1b[1;5A')
    expect(keyBytes('PageUp', app)).toBe('\x1b[5~')
  })

  it('takes key names in any case, as tmux does, but keeps single characters as they are', () => {
    for (const [name, bytes] of [
      ['enter', '\r'],
      ['ESCAPE', '\x1b'],
      ['pgup', '\x1b[5~'],
      ['bspace', '\x7f'],
      ['f5', '\x1b[15~'],
      ['c-up', '\x1b[1;5A'],
      ['btab', '\x1b[Z'],
      ['m-ENTER', '\x1b\r'],
    ]) {
      expect(keyBytes(name), name).toBe(bytes)
    }
    expect(keyBytes('A')).toBe('A')
    expect(keyBytes('M-A')).toBe('\x1bA')
  })

  it.each(['', 'Enterr', 'C-', 'C-é', 'C-Foo', 'ab', 'X-a', 'C-1'])('refuses %j', (name) => {
    expect(keyBytes(name)).toBeUndefined()
  })

  it('lists names that all resolve', () => {
    expect(KEY_NAMES.length).toBeGreaterThan(20)
    for (const name of KEY_NAMES) expect(keyBytes(name), name).toBeTypeOf('string')
  })
})
