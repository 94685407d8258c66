import { describe, expect, it } from 'vitest'
import { parseSend } from './send.ts'

describe('send command lines', () => {
  it('reads every word that is not an option of its own as text, in order with the keys', () => {
    expect(parseSend(['S', 'T', 'git', 'commit', '-m', 'wip', '--key', 'Enter'])).toMatchObject({
      positionals: ['S', 'T'],
      pieces: [{ text: 'git commit -m wip' }, { key: 'Enter' }],
    })
    expect(parseSend(['S', 'T', '--key', 'Escape', ':wq', '--key=Enter']).pieces).toEqual([
      { key: 'Escape' },
      { text: ':wq' },
      { key: 'Enter' },
    ])
    expect(parseSend(['S', 'T', 'ls', '-la', '--key', 'Enter']).pieces).toEqual([{ text: 'ls -la' }, { key: 'Enter' }])
  })

  it('reads every word after -- as text, options included; options before it anywhere', () => {
    expect(parseSend(['--url', 'http://x', 'S', 'T', 'a', '--token=tk', '--', '--key', 'Enter', '--help'])).toEqual({
      help: false,
      remote: { url: 'http://x', token: 'tk' },
      positionals: ['S', 'T'],
      pieces: [{ text: 'a --key Enter --help' }],
    })
    expect(parseSend(['S', 'T', '-h']).help).toBe(true)
  })

  it('refuses an option without its value', () => {
    expect(() => parseSend(['S', 'T', '--key'])).toThrow("send's --key needs a value")
  })
})
