/**
 * Round trip: bytes → @xterm/headless → encode → decode → replay into a fresh terminal → the same
 * cells (characters, widths, attributes, colours, wrapped flags), cursor, modes, palette and title;
 * and re-encoding the copy gives the identical revision.
 */
import { describe, expect, it } from 'vitest'
import { RowEncoder } from './encode.ts'
import { bufferDiff, emulator, roundTrip } from '../../test/support/display/harness.ts'

type Step = string | { resize: [number, number] }
const E = '\x1b'

function sgrSoup(): string {
  let s = ''
  const attrs = ['1', '2', '3', '4', '4:2', '4:3', '4:4', '4:5', '5', '7', '8', '9', '53', '1;3;4', '2;7;9']
  for (let i = 0; i < 60; i++) {
    const a = attrs[i % attrs.length]
    s += `${E}[0;${a};${30 + (i % 8)};${100 + (i % 8)}m${String.fromCharCode(65 + (i % 26))}x${E}[0m `
  }
  return s
}

function palette256(): string {
  let s = ''
  for (let i = 0; i < 256; i++) s += `${E}[38;5;${i};48;5;${255 - i}m${(i % 10).toString()}`
  return `${s}${E}[0m\r\n`
}

function rgbRamp(): string {
  let s = ''
  for (let i = 0; i < 120; i++) s += `${E}[38;2;${i * 2};${255 - i};${(i * 7) % 256};48;2;${i};${i};0m#`
  return `${s}${E}[58;2;10;200;30;4:3mcurly${E}[59;4:2mdouble${E}[0m\r\n`
}

function longLines(): string {
  let s = ''
  for (let i = 0; i < 30; i++) s += `${E}[3${i % 8}m${'long line '.repeat(40 + i)}${E}[0m\r\n`
  return s
}

const CORPUS: Array<{ name: string; cols: number; rows: number; steps: Step[]; scrollback?: number }> = [
  { name: 'plain text and cursor', cols: 80, rows: 24, steps: ['hello world\r\n$ ls -la\r\n', 'prompt$ '] },
  { name: 'SGR combinations', cols: 80, rows: 24, steps: [sgrSoup()] },
  { name: '256 colours', cols: 80, rows: 24, steps: [palette256(), palette256()] },
  { name: 'RGB colours and underline styles/colours', cols: 100, rows: 20, steps: [rgbRamp()] },
  {
    name: 'styled blanks (erase with background)',
    cols: 40,
    rows: 10,
    steps: [`${E}[44m${E}[2J${E}[H${E}[41mred${E}[K\r\n${E}[42m   ${E}[0mtext${E}[45m${E}[5X\r\n${E}[0m${E}[43m${E}[2K${E}[0m\r\nend`],
  },
  {
    name: 'CJK wide characters and wrapping at odd widths',
    cols: 21,
    rows: 8,
    steps: [
      `漢字かなカナ한국어中文字符串${E}[31m红色的字${E}[0m和更多的文字内容一直到换行\r\nab中c\r\n`,
      `${E}[44mx中文中文中文中文中文中文中文${E}[0m\r\n`,
      `${E}[1;31;44m中文中文中文中文中文中文中文中文${E}[0m\r\n`,
    ],
  },
  {
    name: 'combining marks and emoji',
    cols: 30,
    rows: 6,
    steps: ['e\u0301 a\u0308\u0304 n\u0303 \u{1F600} \u{1F468}\u200D\u{1F469} x\r\nZ\u0336a\u0336l\u0336g\u0336o\u0336\r\n'],
  },
  {
    name: 'scroll regions',
    cols: 40,
    rows: 12,
    steps: [
      Array.from({ length: 12 }, (_, i) => `line ${i}`).join('\r\n'),
      `${E}[3;8r${E}[8;1H`,
      Array.from({ length: 9 }, (_, i) => `\n${E}[3${i % 7}mscrolled ${i}${E}[0m`).join(''),
      `${E}[r${E}[12;1H`,
    ],
  },
  {
    name: 'alternate screen active',
    cols: 50,
    rows: 10,
    steps: [
      'shell line 1\r\nshell line 2\r\n',
      `${E}[?1049h${E}[H${E}[2J${E}[7m vim ${E}[0m\r\n~\r\n~\r\n${E}[44m status ${E}[0m${E}[3;2H`,
    ],
  },
  {
    name: 'alternate screen entered and left (47, 1047)',
    cols: 30,
    rows: 6,
    steps: ['before\r\n', `${E}[?47hALT47${E}[?47l`, `${E}[?1047hALT1047${E}[?1047l`, 'after'],
  },
  {
    name: 'resize with reflow',
    cols: 40,
    rows: 8,
    steps: [
      `${E}[32m${'reflow me '.repeat(20)}${E}[0m\r\nshort\r\n`,
      { resize: [25, 8] },
      'more text that wraps at the new width\r\n',
      { resize: [60, 10] },
    ],
  },
  {
    name: 'title, palette (OSC 4/10/11/12) and modes',
    cols: 60,
    rows: 10,
    steps: [
      `${E}]0;my title${E}\\${E}]4;1;rgb:12/34/56;200;#abcdef${E}\\${E}]10;rgb:ffff/0000/0000${E}\\${E}]11;#102030${E}\\${E}]12;rgb:0/f/0${E}\\`,
      `${E}]4;2;rgb:00/ff/00${E}\\${E}]104;2${E}\\`,
      `${E}[?1h${E}[?66h${E}[?2004h${E}[?1002h${E}[?1006h${E}[?1004h${E}[?25l${E}[5 q${E}[4h`,
      'text with modes',
    ],
  },
  { name: 'origin mode and no wraparound', cols: 20, rows: 5, steps: [`${E}[?7l${'x'.repeat(30)}\r\n${E}[?6h${E}[2;3Hmid`] },
  { name: 'very long lines into history', cols: 80, rows: 24, steps: [longLines()] },
  { name: 'cursor pending wrap after a full row', cols: 10, rows: 4, steps: ['0123456789'] },
  { name: 'history trimmed mid-line (wrapped oldest row)', cols: 20, rows: 4, scrollback: 10, steps: ['a'.repeat(20 * 30)] },
]

function apply(e: ReturnType<typeof emulator>, steps: Step[]): Promise<void> {
  return steps.reduce<Promise<void>>(
    (p, step) => p.then(() => (typeof step === 'string' ? e.write(step) : void e.terminal.resize(...step.resize))),
    Promise.resolve(),
  )
}

describe('display round trip', () => {
  for (const c of CORPUS) {
    it(c.name, async () => {
      const source = emulator(c.cols, c.rows, c.scrollback)
      await apply(source, c.steps)
      const { encoded, copy, reencoded } = await roundTrip(source)
      const t = source.terminal
      expect(bufferDiff(t.buffer.normal, copy.terminal.buffer.normal, t.cols)).toEqual([])
      if (t.buffer.active.type === 'alternate') {
        expect(copy.terminal.buffer.active.type).toBe('alternate')
        expect(bufferDiff(t.buffer.alternate, copy.terminal.buffer.alternate, t.cols)).toEqual([])
      }
      expect(copy.tracker.cursor()).toEqual(source.tracker.cursor())
      expect(copy.tracker.inputModes()).toEqual(source.tracker.inputModes())
      expect(copy.tracker.paletteState()).toEqual(source.tracker.paletteState())
      expect(copy.tracker.title).toBe(source.tracker.title)
      if (!source.tracker.lastAlternate) expect(reencoded.chunks).toEqual(encoded.chunks)
      expect(reencoded.meta).toEqual(encoded.meta)
      // The storage-word walk and the public-API walk read every line identically.
      for (const buffer of [t.buffer.normal, t.buffer.alternate]) {
        const fast = new RowEncoder(buffer.getNullCell())
        const slow = new RowEncoder(buffer.getNullCell(), undefined, { publicApiOnly: true })
        for (let y = 0; y < buffer.length; y++) {
          const a = fast.encode(buffer.getLine(y), t.cols).map((v, i) => (i % 2 === 1 ? fast.styles.styles[v as number] : v))
          const b = slow.encode(buffer.getLine(y), t.cols).map((v, i) => (i % 2 === 1 ? slow.styles.styles[v as number] : v))
          expect(a).toEqual(b)
        }
      }
    })
  }
})
