/**
 * What a revision cannot show but a later byte can observe, so a released emulator can be rebuilt
 * from its newest revision (sidecar/emulator/emulator.ts): the display (cells, history, cursor,
 * modes, palette, title) is replayed with `replayAnsi`, and this state is then set where xterm.js
 * keeps it — each buffer's scroll region, saved cursor (DECSC, and the one 1049 saves), tab stops;
 * the drawing attributes; the character sets G0–G3, the shift level and the active set; the DEC
 * private modes and mouse protocol; the title and icon-name stacks; the last printed character
 * (for REP). No public API has these (the follow snapshot's suffix reads some the same way,
 * cursor.ts), so this pins @xterm/headless 6.0.0's internals, and the rebuild test
 * (restore.test.ts) fails if they move.
 *
 * `captureState` answers undefined where no rebuild from a revision can be exact — the parser in
 * the middle of a sequence or of a UTF-8 character, or a hyperlink open — and the emulator is then
 * rebuilt by replaying its journal from the start instead.
 */
import type { Terminal } from '@xterm/headless'

type Charset = Record<string, string>

interface Attr {
  fg: number
  bg: number
  extended: { ext: number; urlId: number; clone(): Attr['extended'] }
}

interface CoreBuffer {
  x: number
  y: number
  ybase: number
  scrollTop: number
  scrollBottom: number
  savedX: number
  savedY: number
  savedCurAttrData: Attr
  savedCharset: Charset | undefined
  tabs: Record<number, boolean | undefined>
}

interface Core {
  buffers: { normal: CoreBuffer; alt: CoreBuffer; active: CoreBuffer }
  coreService: { isCursorHidden: boolean; modes: Record<string, unknown>; decPrivateModes: Record<string, unknown> }
  coreMouseService: { activeProtocol: string; activeEncoding: string }
  _charsetService: { charset: Charset | undefined; glevel: number; _charsets: (Charset | undefined)[] }
  _inputHandler: {
    _curAttrData: Attr
    _windowTitle: string
    _iconName: string
    _windowTitleStack: string[]
    _iconNameStack: string[]
    _utf8Decoder: { interim: Uint8Array }
    _stringDecoder: { _interim: number }
    _parser: { currentState: number; precedingJoinState: number; _parseStack: { state: number } }
  }
}

function core(terminal: Terminal): Core {
  const c = (terminal as unknown as { _core?: Core })._core
  const ok =
    c?.buffers?.normal &&
    c.buffers.alt &&
    c.coreService?.decPrivateModes &&
    c.coreMouseService &&
    Array.isArray(c._charsetService?._charsets) &&
    c._inputHandler?._curAttrData?.extended &&
    c._inputHandler._parser &&
    c._inputHandler._utf8Decoder?.interim &&
    Array.isArray(c._inputHandler._windowTitleStack)
  if (!ok) throw new Error('@xterm/headless internals changed: the emulator state cannot be captured')
  return c
}

export interface AttrState {
  fg: number
  bg: number
  ext: number
}

export interface BufferState {
  /** The cursor (x = cols while a wrap is pending); the inactive buffer's is where it returns. */
  x: number
  y: number
  scrollTop: number
  scrollBottom: number
  savedX: number
  /** Row of the saved cursor in the viewport (xterm counts it from the top of the history). */
  savedRow: number
  savedFg: number
  savedBg: number
  savedCharset: Charset | null
  tabs: number[]
}

/** Everything a revision lacks for an exact rebuild (JSON: it is stored with the revision). */
export interface EmulatorState {
  v: 1
  normal: BufferState
  alternate: BufferState
  attr: AttrState
  charsets: (Charset | null)[]
  glevel: number
  charset: Charset | null
  decPrivateModes: Record<string, unknown>
  modes: Record<string, unknown>
  cursorHidden: boolean
  mouse: { protocol: string; encoding: string }
  windowTitle: string
  iconName: string
  titleStack: string[]
  iconStack: string[]
  preceding: number
}

function bufferState(b: CoreBuffer): BufferState {
  const tabs: number[] = []
  for (const key of Object.keys(b.tabs)) if (b.tabs[Number(key)]) tabs.push(Number(key))
  return {
    x: b.x,
    y: b.y,
    scrollTop: b.scrollTop,
    scrollBottom: b.scrollBottom,
    savedX: b.savedX,
    savedRow: Math.max(0, b.savedY - b.ybase),
    savedFg: b.savedCurAttrData.fg,
    savedBg: b.savedCurAttrData.bg,
    savedCharset: b.savedCharset ?? null,
    tabs,
  }
}

const GROUND = 0

/** The state, or undefined when a rebuild from a revision could not be exact (see the module). */
export function captureState(terminal: Terminal): EmulatorState | undefined {
  const c = core(terminal)
  const input = c._inputHandler
  const parser = input._parser
  if (parser.currentState !== GROUND || parser._parseStack.state !== 0) return undefined
  if (input._utf8Decoder.interim.some((b) => b !== 0) || input._stringDecoder._interim) return undefined
  if (input._curAttrData.extended.urlId !== 0) return undefined
  const charsets = c._charsetService
  // As stored (JSON): a mode xterm leaves undefined is simply absent, on both sides of a rebuild.
  return json({
    v: 1 as const,
    normal: bufferState(c.buffers.normal),
    alternate: bufferState(c.buffers.alt),
    attr: { fg: input._curAttrData.fg, bg: input._curAttrData.bg, ext: input._curAttrData.extended.ext },
    charsets: [0, 1, 2, 3].map((g) => charsets._charsets[g] ?? null),
    glevel: charsets.glevel,
    charset: charsets.charset ?? null,
    decPrivateModes: { ...c.coreService.decPrivateModes },
    modes: { ...c.coreService.modes },
    cursorHidden: c.coreService.isCursorHidden,
    mouse: { protocol: c.coreMouseService.activeProtocol, encoding: c.coreMouseService.activeEncoding },
    windowTitle: input._windowTitle,
    iconName: input._iconName,
    titleStack: input._windowTitleStack.slice(),
    iconStack: input._iconNameStack.slice(),
    preceding: parser.precedingJoinState,
  })
}

const json = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T

function applyBuffer(b: CoreBuffer, s: BufferState): void {
  b.x = s.x
  b.y = s.y
  b.scrollTop = s.scrollTop
  b.scrollBottom = s.scrollBottom
  b.savedX = s.savedX
  b.savedY = b.ybase + s.savedRow
  b.savedCurAttrData.fg = s.savedFg
  b.savedCurAttrData.bg = s.savedBg
  b.savedCharset = s.savedCharset ?? undefined
  b.tabs = {}
  for (const x of s.tabs) b.tabs[x] = true
}

/** Sets the state on a terminal the revision was just replayed into (after every write landed). */
export function applyState(terminal: Terminal, s: EmulatorState): void {
  const c = core(terminal)
  applyBuffer(c.buffers.normal, s.normal)
  applyBuffer(c.buffers.alt, s.alternate)
  const attr = c._inputHandler._curAttrData
  attr.fg = s.attr.fg
  attr.bg = s.attr.bg
  attr.extended = attr.extended.clone()
  attr.extended.ext = s.attr.ext
  const charsets = c._charsetService
  s.charsets.forEach((charset, g) => (charsets._charsets[g] = charset ?? undefined))
  charsets.glevel = s.glevel
  charsets.charset = s.charset ?? undefined
  c.coreService.decPrivateModes = { ...s.decPrivateModes }
  c.coreService.modes = { ...s.modes }
  c.coreService.isCursorHidden = s.cursorHidden
  c.coreMouseService.activeProtocol = s.mouse.protocol
  c.coreMouseService.activeEncoding = s.mouse.encoding
  const input = c._inputHandler
  input._windowTitle = s.windowTitle
  input._iconName = s.iconName
  input._windowTitleStack = s.titleStack.slice()
  input._iconNameStack = s.iconStack.slice()
  input._parser.precedingJoinState = s.preceding
}
