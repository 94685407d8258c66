/**
 * Whose window decides a shared terminal's size. The program's size follows the window that holds
 * control once that window is used (a key, a paste, or "Fit to this window"), as tmux's
 * `window-size latest` follows the client that last typed; merely opening a terminal, or watching
 * it read-only, never resizes it, so a narrow window does not squeeze it for everyone. A window
 * that does not decide shows the terminal at its size: scaled down (a smaller font) to fit, and
 * scrolled once the font would be too small to read.
 */
import type { Terminal } from '@xterm/xterm'

/** The page's terminal font size, and the smallest a scaled-down terminal goes before it scrolls. */
export const BASE_FONT_SIZE = 14
const MIN_FONT_SIZE = 6
/** Font sizes are tried in half-pixel steps (cell sizes are whole device pixels after rounding). */
const FONT_STEP = 0.5

/** How the view shows the terminal: `fit` (the program follows this window), `natural` (its size
 * fits this window as it is), `scaled` (shrunk to fit), `scroll` (too big even at the smallest font). */
export type SizeMode = 'fit' | 'natural' | 'scaled' | 'scroll'

interface Box {
  width: number
  height: number
}

/** Pure: the font size at which a screen of `screen` pixels at `font` fits in `room`. */
export function fittingFontSize(screen: Box, room: Box, font: number): number {
  if (screen.width <= 0 || screen.height <= 0 || room.width <= 0 || room.height <= 0) return font
  const ratio = Math.min(room.width / screen.width, room.height / screen.height)
  const fitting = Math.floor((font * ratio) / FONT_STEP) * FONT_STEP
  return Math.max(MIN_FONT_SIZE, Math.min(BASE_FONT_SIZE, fitting))
}

/** The inner size of `host` (without its padding). */
function roomIn(host: HTMLElement): Box {
  const style = getComputedStyle(host)
  return {
    width: host.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
    height: host.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom),
  }
}

/** The drawn screen's size (its rows and columns, without xterm's scrollbar). */
function screenOf(term: Terminal): Box | undefined {
  const screen = term.element?.querySelector<HTMLElement>('.xterm-screen')
  return screen ? { width: screen.offsetWidth, height: screen.offsetHeight } : undefined
}

/**
 * Shows `term` at its own size inside `host`: the largest font up to BASE_FONT_SIZE at which it
 * fits, else the smallest, scrolled. Returns the mode that results.
 */
export async function scaleToFit(term: Terminal, host: HTMLElement): Promise<SizeMode> {
  const room = roomIn(host)
  const overflows = (screen: Box) => screen.width > room.width || screen.height > room.height
  // Cell sizes round to device pixels, so a proportional estimate may still be a little large:
  // then one step smaller, a few times at most.
  for (let attempt = 0; attempt < 4; attempt++) {
    const screen = screenOf(term)
    if (!screen) return 'natural'
    const font = term.options.fontSize ?? BASE_FONT_SIZE
    let next = fittingFontSize(screen, room, font)
    if (next >= font && overflows(screen)) next = Math.max(MIN_FONT_SIZE, font - FONT_STEP)
    if (next === font) break
    term.options.fontSize = next
    await new Promise((resolve) => requestAnimationFrame(resolve))
  }
  const screen = screenOf(term)
  if (screen && overflows(screen)) return 'scroll'
  return (term.options.fontSize ?? BASE_FONT_SIZE) < BASE_FONT_SIZE ? 'scaled' : 'natural'
}
