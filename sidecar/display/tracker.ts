/**
 * Per-terminal display state that xterm's public API does not expose, kept by parser hooks that
 * always return false so xterm still handles every sequence itself:
 *   - palette changes (OSC 4/10/11/12 set, OSC 104/110/111/112 reset),
 *   - cursor visibility (DECTCEM), cursor style and blink (DECSCUSR), mouse encoding (1005/1006/
 *     1015/1016), resets (DECSTR, RIS),
 *   - the title (onTitleChange),
 *   - the last alternate screen: just before DECRST 1049/1047/47 (or RIS) leaves the alternate
 *     buffer, its viewport is encoded, so a vim/less screen is still there after the app exits.
 * Hooks added later run first, so the capture sees the alternate buffer before xterm leaves it.
 */
import type { IDisposable, Terminal } from '@xterm/headless'
import type { CellStyle, Cursor, CursorStyle, EncodedRow, InputModes, Palette } from '../../schema/wire/display.ts'
import { RowEncoder } from './encode.ts'
import { DEFAULT_PALETTE, parseColorSpec } from './palette.ts'

type MouseEncoding = InputModes['mouseEncoding']

/** An alternate viewport captured with its own style table (remapped when a revision is built). */
export interface CapturedScreen {
  rows: EncodedRow[]
  styles: CellStyle[]
}

const CURSOR_STYLE_BY_PARAM: Record<number, [CursorStyle, boolean]> = {
  1: ['block', true],
  2: ['block', false],
  3: ['underline', true],
  4: ['underline', false],
  5: ['bar', true],
  6: ['bar', false],
}

const MOUSE_ENCODING_BY_MODE: Record<number, MouseEncoding> = { 1005: 'utf8', 1006: 'sgr', 1015: 'urxvt', 1016: 'sgr-pixels' }

function modeParams(params: (number | number[])[]): number[] {
  return params.map((p) => (Array.isArray(p) ? p[0] : p))
}

export class DisplayTracker {
  readonly terminal: Terminal
  title = ''
  cursorVisible = true
  #cursorStyle: [CursorStyle, boolean] | undefined
  mouseEncoding: MouseEncoding = 'default'
  palette: Palette['changes'] = { indexed: {} }
  lastAlternate: CapturedScreen | undefined
  /** Bumped by every tracked change (title, palette, modes, capture), for cheap change checks. */
  generation = 0
  readonly #disposables: IDisposable[] = []

  constructor(terminal: Terminal) {
    this.terminal = terminal
    const p = terminal.parser
    const keep = (d: IDisposable) => this.#disposables.push(d)
    keep(terminal.onTitleChange((title) => this.#touch(() => (this.title = title))))
    keep(p.registerCsiHandler({ prefix: '?', final: 'h' }, (params) => this.#decset(modeParams(params), true)))
    keep(p.registerCsiHandler({ prefix: '?', final: 'l' }, (params) => this.#decset(modeParams(params), false)))
    keep(p.registerCsiHandler({ intermediates: ' ', final: 'q' }, (params) => this.#decscusr(modeParams(params))))
    keep(p.registerCsiHandler({ intermediates: '!', final: 'p' }, () => this.#softReset()))
    keep(p.registerEscHandler({ final: 'c' }, () => this.#fullReset()))
    keep(p.registerOscHandler(4, (data) => this.#setIndexed(data)))
    keep(p.registerOscHandler(104, (data) => this.#resetIndexed(data)))
    for (const [osc, slot] of [
      [10, 0],
      [11, 1],
      [12, 2],
    ] as const) {
      keep(p.registerOscHandler(osc, (data) => this.#setDynamic(slot, data)))
      keep(p.registerOscHandler(osc + 100, () => this.#resetDynamic(slot)))
    }
  }

  dispose(): void {
    for (const d of this.#disposables.splice(0)) d.dispose()
  }

  #touch(change: () => void): false {
    change()
    this.generation++
    return false
  }

  #decset(modes: number[], on: boolean): false {
    for (const mode of modes) {
      if (mode === 25) this.#touch(() => (this.cursorVisible = on))
      else if (mode in MOUSE_ENCODING_BY_MODE) {
        this.#touch(() => (this.mouseEncoding = on ? MOUSE_ENCODING_BY_MODE[mode] : 'default'))
      } else if (!on && (mode === 1049 || mode === 1047 || mode === 47)) this.#captureAlternate()
    }
    return false
  }

  #decscusr([param = 1]: number[]): false {
    return this.#touch(() => (this.#cursorStyle = param === 0 ? undefined : (CURSOR_STYLE_BY_PARAM[param] ?? this.#cursorStyle)))
  }

  #softReset(): false {
    return this.#touch(() => {
      this.cursorVisible = true
      this.#cursorStyle = undefined
    })
  }

  #fullReset(): false {
    this.#captureAlternate()
    return this.#touch(() => {
      this.cursorVisible = true
      this.#cursorStyle = undefined
      this.mouseEncoding = 'default'
      this.palette = { indexed: {} }
      this.title = ''
    })
  }

  #setIndexed(data: string): false {
    const parts = data.split(';')
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const index = Number(parts[i])
      const colour = parseColorSpec(parts[i + 1])
      if (Number.isInteger(index) && index >= 0 && index <= 255 && colour) {
        this.#touch(() => (this.palette.indexed[String(index)] = colour))
      }
    }
    return false
  }

  #resetIndexed(data: string): false {
    return this.#touch(() => {
      if (data === '') this.palette.indexed = {}
      else for (const index of data.split(';')) delete this.palette.indexed[String(Number(index))]
    })
  }

  #setDynamic(first: 0 | 1 | 2, data: string): false {
    // OSC 10 ; fg ; bg ; cursor — each extra parameter addresses the next dynamic colour.
    const slots = ['foreground', 'background', 'cursor'] as const
    data.split(';').forEach((spec, offset) => {
      const slot = slots[first + offset]
      const colour = parseColorSpec(spec)
      if (slot && colour) this.#touch(() => (this.palette[slot] = colour))
    })
    return false
  }

  #resetDynamic(slot: 0 | 1 | 2): false {
    return this.#touch(() => delete this.palette[(['foreground', 'background', 'cursor'] as const)[slot]])
  }

  #captureAlternate(): void {
    const terminal = this.terminal
    const buffer = terminal.buffer.active
    if (buffer.type !== 'alternate') return
    const encoder = new RowEncoder(buffer.getNullCell())
    const rows: EncodedRow[] = []
    for (let y = 0; y < terminal.rows; y++) rows.push(encoder.encode(buffer.getLine(buffer.baseY + y), terminal.cols))
    this.lastAlternate = { rows, styles: encoder.styles.styles }
    this.generation++
  }

  cursor(): Cursor {
    const buffer = this.terminal.buffer.active
    const [style, blink] = this.#cursorStyle ?? [this.terminal.options.cursorStyle ?? 'block', this.terminal.options.cursorBlink ?? false]
    return { row: buffer.cursorY, col: buffer.cursorX, visible: this.cursorVisible, style, blink }
  }

  inputModes(): InputModes {
    const m = this.terminal.modes
    return {
      applicationCursorKeys: m.applicationCursorKeysMode,
      applicationKeypad: m.applicationKeypadMode,
      bracketedPaste: m.bracketedPasteMode,
      mouseTracking: m.mouseTrackingMode,
      mouseEncoding: this.mouseEncoding,
      focusReporting: m.sendFocusMode,
      origin: m.originMode,
      wraparound: m.wraparoundMode,
      reverseWraparound: m.reverseWraparoundMode,
      insert: m.insertMode,
      alternateScreen: this.terminal.buffer.active.type === 'alternate',
    }
  }

  paletteState(): Palette {
    return { defaults: DEFAULT_PALETTE, changes: structuredClone(this.palette) }
  }
}
