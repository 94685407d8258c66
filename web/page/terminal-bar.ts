/**
 * The bar above a terminal: whether it is read-only (and why: another window controls it, or it
 * is a last screen), the program's size and who decides it (./sizing.ts), "Fit to this window"
 * while this window does not decide, and "Find" with its find bar.
 */
import { h } from './dom.ts'
import type { SizeMode } from './sizing.ts'
import { FindBar } from './terminal-tools.ts'

export interface BarState {
  cols: number
  rows: number
  size: SizeMode | undefined
  /** Nothing more to type into: a last screen, or a terminal that ended under this view. */
  finished: boolean
  readOnly: boolean
  /** Whether "Fit to this window" is offered. */
  canFit: boolean
}

const HOW: Record<SizeMode, string> = {
  fit: 'follows this window',
  scaled: 'shown smaller to fit this window',
  scroll: 'larger than this window: scroll to see it all',
  natural: 'shown as it is',
}

export class TerminalBar {
  readonly element: HTMLElement
  readonly find = new FindBar()
  readonly #badge = h('span', { class: 'badge' })
  readonly #size = h('span', { class: 'muted size' })
  readonly #fit: HTMLButtonElement
  /** "↑ Command" / "↓ Command", shown once the terminal's commands are marked. */
  readonly commands: HTMLElement
  /** Where the command buttons jump (set by the view). */
  onJump: (direction: -1 | 1) => void = () => {}

  constructor(onFit: () => void) {
    const jump = (direction: -1 | 1, label: string, text: string) =>
      h('button', { type: 'button', class: 'small', 'aria-label': label, title: label, onclick: () => this.onJump(direction) }, text)
    this.commands = h(
      'span',
      { class: 'command-nav' },
      jump(-1, 'Previous command (Ctrl+Shift+Up)', '↑ Command'),
      jump(1, 'Next command (Ctrl+Shift+Down)', '↓ Command'),
    )
    this.commands.hidden = true
    this.#fit = h('button', { type: 'button', class: 'small fit', title: 'Resize the program to this window' }, 'Fit to this window')
    this.#fit.addEventListener('click', onFit)
    const find = h('button', { type: 'button', class: 'small', title: 'Find in the scrollback (Ctrl+Shift+F)' }, 'Find')
    find.addEventListener('click', () => this.find.open())
    this.element = h('div', { class: 'terminal-bar' }, this.#badge, this.#size, this.#fit, this.commands, find, this.find.element)
  }

  show({ cols, rows, size, finished, readOnly, canFit }: BarState): void {
    this.#badge.textContent = finished ? 'read-only · last screen' : readOnly ? 'read-only' : ''
    this.#badge.hidden = this.#badge.textContent === ''
    this.#size.textContent = `${cols}×${rows} · ${HOW[size ?? 'natural']}`
    this.#fit.hidden = !canFit
  }
}
