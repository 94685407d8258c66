/**
 * The CLI's local screen measures characters as the sidecar does (Unicode 11): after a remote
 * program leaves the alternate screen, the repainted normal screen puts the cursor after an emoji
 * two cells wide, where the remote program and the sidecar's emulator have it.
 */
import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { LocalScreen } from '../../cli/local-screen.ts'

describe('LocalScreen', () => {
  it('repaints the normal screen with Unicode 11 widths (an emoji is two cells)', async () => {
    const out = new PassThrough()
    let written = ''
    out.on('data', (chunk: Buffer) => (written += chunk.toString()))
    const screen = new LocalScreen(out)
    screen.enter()
    screen.write(Buffer.from('prompt \u{1F600}x'))
    screen.write(Buffer.from('\x1b[?1049hfull-screen app\x1b[?1049l'))
    await screen.leave()
    // The repaint after leaving ends with the cursor put back: column 7 + 2 + 1 = 10, CUP 1;11.
    const repaint = written.slice(written.indexOf('full-screen app'))
    expect(repaint).toMatch(/\x1b\[1;11H(?:\x1b\[[0-9;]*m)*\x1b\[\?25h/)
  })
})
