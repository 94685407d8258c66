/**
 * The client's readDisplay staging (complete transfers only) and the printable form used by
 * `termkeep display`, on rows hand-encoded in the documented wire format (schema/wire/display.ts).
 */
import { describe, expect, it } from 'vitest'
import type { DisplayBegin, RowsEvent } from '../../schema/wire/display.ts'
import { DisplayStaging } from '../../common/display/staging.ts'
import { displayToLines } from './display.ts'

const begin = (cols: number, rows: number, alternateScreen = false, chunks = 1) =>
  ({
    revision: 3,
    chunks,
    cols,
    rows,
    alternateScreen,
    cursor: { row: 0, col: 0, visible: true, style: 'block', blink: true },
  }) as unknown as DisplayBegin

function stage(events: [string, unknown][]) {
  const staging = new DisplayStaging()
  for (const [event, data] of events) staging.accept(event, data)
  return staging.finish()
}

describe('DisplayStaging', () => {
  const rows: RowsEvent = { region: 'viewport', index: 0, styleBase: 1, styles: [{ fg: 1 }], rows: [[0, 1, 'red']] }

  it('yields nothing until end arrived (an interrupted transfer is discarded)', () => {
    expect(
      stage([
        ['begin', begin(10, 2)],
        ['rows', rows],
      ]),
    ).toBeUndefined()
    expect(
      stage([
        ['rows', rows],
        ['end', { revision: 3, truncated: false }],
      ]),
    ).toBeUndefined()
    expect(
      stage([
        ['begin', begin(10, 2)],
        ['rows', rows],
        ['end', { revision: 3, truncated: false }],
      ])?.viewport,
    ).toHaveLength(1)
  })

  it('yields nothing when a rows event is missing or the end is of another revision', () => {
    const complete: [string, unknown][] = [
      ['begin', begin(10, 2, false, 2)],
      ['rows', rows],
      ['rows', { ...rows, index: 1 }],
      ['end', { revision: 3, truncated: false }],
    ]
    expect(stage(complete)?.viewport).toHaveLength(2)
    expect(stage(complete.filter((_, i) => i !== 2))).toBeUndefined()
    expect(stage([...complete.slice(0, 3), ['end', { revision: 4, truncated: false }]])).toBeUndefined()
  })

  it('starts over at a new begin', () => {
    const staged = stage([
      ['begin', begin(10, 2)],
      ['rows', rows],
      ['begin', begin(10, 2)],
      ['rows', rows],
      ['end', { revision: 3, truncated: false }],
    ])
    expect(staged?.viewport).toHaveLength(1)
  })
})

describe('displayToLines', () => {
  const events = (b: DisplayBegin, ...parts: RowsEvent[]): [string, unknown][] => [
    ['begin', b],
    ...parts.map((p): [string, unknown] => ['rows', p]),
    ['end', { revision: 3, truncated: false }],
  ]

  it('prints history (oldest first) then the viewport, in colour, with styled blanks', () => {
    const display = stage(
      events(
        begin(8, 3, false, 2),
        {
          region: 'viewport',
          index: 0,
          styleBase: 1,
          styles: [{ fg: 2 }, { bg: '#0000ff' }],
          rows: [
            [0, 1, 'GREEN', 0, '-ok'],
            [0, 2, 3],
          ],
        },
        {
          region: 'history',
          index: 0,
          styleBase: 3,
          styles: [],
          rows: [
            [0, 0, 'newer'],
            [0, 0, 'older'],
          ],
        },
      ),
    )!
    expect(displayToLines(display, { color: false })).toBe('older\nnewer\nGREEN-ok\n   \n')
    const coloured = displayToLines(display)
    expect(coloured).toContain('\x1b[0;32mGREEN\x1b[0m-ok')
    expect(coloured).toContain('\x1b[0;48;2;0;0;255m   ')
    expect(displayToLines(display, { color: false, history: false })).toBe('GREEN-ok\n   \n')
  })

  it('joins soft-wrapped rows, keeps wide characters once, shows the active alternate screen', () => {
    const wrapped = stage(
      events(begin(4, 2), {
        region: 'viewport',
        index: 0,
        styleBase: 1,
        styles: [],
        rows: [
          [0, 0, 'ab'],
          [1, 0, ['世', ''], 0, 'c'],
        ],
      }),
    )!
    expect(displayToLines(wrapped, { color: false })).toBe('ab  世c\n')
    const alternate = stage(
      events(
        begin(4, 1, true, 2),
        { region: 'viewport', index: 0, styleBase: 1, styles: [], rows: [[0, 0, 'main']] },
        { region: 'alternate', index: 0, styleBase: 1, styles: [], rows: [[0, 0, 'vim']] },
      ),
    )!
    expect(displayToLines(alternate, { color: false })).toBe('vim\n')
  })
})
