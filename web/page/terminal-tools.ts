/**
 * What a VS Code terminal user reaches for first, on each of the page's terminals: find in the
 * scrollback (Ctrl+Shift+F or "Find": @xterm/addon-search, matches highlighted, "3 of 12"),
 * links that open when clicked (@xterm/addon-web-links), copy on select and Ctrl+Shift+C, and
 * Ctrl+Shift+V, which pastes through xterm.js's own paste: wrapped for bracketed paste when the
 * program turned it on, line ends as Enter.
 */
import { SearchAddon } from '@xterm/addon-search'
import { WebLinksAddon } from '@xterm/addon-web-links'
import type { IDisposable, Terminal } from '@xterm/xterm'
import { h } from './dom.ts'

/** How matches are drawn (decorations also make the addon count them). */
const DECORATIONS = {
  matchBackground: '#5b4a1a',
  matchBorder: '#8a7434',
  matchOverviewRuler: '#8a7434',
  activeMatchBackground: '#c69214',
  activeMatchBorder: '#ffd166',
  activeMatchColorOverviewRuler: '#ffd166',
}

const isKey = (e: KeyboardEvent, key: string) => e.type === 'keydown' && e.ctrlKey && e.shiftKey && !e.altKey && e.key.toLowerCase() === key

/** Copies text to the clipboard; quietly nothing where the page may not (no secure context). */
function copy(text: string): void {
  if (text) void navigator.clipboard?.writeText(text).catch(() => {})
}

/** The find bar above a terminal; it searches whichever terminal is attached to it last. */
export class FindBar {
  readonly element: HTMLElement
  readonly #input: HTMLInputElement
  readonly #count: HTMLElement
  #search: SearchAddon | undefined
  #results: IDisposable | undefined

  constructor() {
    this.#input = h('input', { type: 'search', class: 'find-input', 'aria-label': 'Find in the terminal', placeholder: 'Find' })
    this.#count = h('span', { class: 'muted find-count', role: 'status', 'aria-live': 'polite' })
    const button = (label: string, text: string, onclick: () => void) =>
      h('button', { type: 'button', class: 'small', 'aria-label': label, title: label, onclick }, text)
    this.element = h(
      'div',
      { class: 'find-bar', role: 'search' },
      this.#input,
      button('Previous match', '↑', () => this.previous()),
      button('Next match', '↓', () => this.next()),
      this.#count,
      button('Close find', '✕', () => this.close()),
    )
    this.element.hidden = true
    this.#input.addEventListener('input', () => this.#find(true))
    this.#input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        event.preventDefault()
        if (event.shiftKey) this.previous()
        else this.next()
      } else if (event.key === 'Escape') {
        event.preventDefault()
        this.close()
      }
    })
  }

  /** Searches this terminal's addon from now on. */
  use(search: SearchAddon): void {
    this.#results?.dispose()
    this.#search = search
    this.#results = search.onDidChangeResults(({ resultIndex, resultCount }) => {
      this.#count.textContent =
        resultCount === 0 ? 'no matches' : resultIndex < 0 ? `${resultCount} matches` : `${resultIndex + 1} of ${resultCount}`
    })
  }

  /** Closing gives focus back to `onClose`'s terminal. */
  onClose: () => void = () => {}

  open(): void {
    this.element.hidden = false
    this.#input.focus()
    this.#input.select()
    if (this.#input.value) this.#find(true)
  }

  get isOpen(): boolean {
    return !this.element.hidden
  }

  next(): void {
    this.#find(false)
  }

  previous(): void {
    if (this.#input.value) this.#search?.findPrevious(this.#input.value, { decorations: DECORATIONS })
  }

  close(): void {
    this.element.hidden = true
    this.#search?.clearDecorations()
    this.#count.textContent = ''
    this.onClose()
  }

  #find(incremental: boolean): void {
    const term = this.#input.value
    if (!term) {
      this.#search?.clearDecorations()
      this.#count.textContent = ''
      return
    }
    this.#search?.findNext(term, { incremental, decorations: DECORATIONS })
  }

  dispose(): void {
    this.#results?.dispose()
  }
}

export interface ToolActions {
  find(): void
  /** Ctrl+Shift+Home: move keyboard focus out of the terminal. */
  leave(): void
  /** Ctrl+Shift+Up / Down: to the previous / next command (web/page/command-marks.ts). */
  jump?(direction: -1 | 1): void
}

/** Ctrl+Shift+Home leaves the terminal for keyboard users; shells do not bind it. */
export const isLeaveKey = (e: KeyboardEvent) => e.type === 'keydown' && e.ctrlKey && e.shiftKey && !e.altKey && e.key === 'Home'
/** Ctrl+Shift+Up / Down jump to the previous / next command (as VS Code's Ctrl+Up / Down). */
export const commandJumpOf = (e: KeyboardEvent): -1 | 1 | undefined => (isKey(e, 'arrowup') ? -1 : isKey(e, 'arrowdown') ? 1 : undefined)

/**
 * Loads the search and links addons into `term`, copies what the mouse selects in `host`, and takes
 * the page's own keys (find, copy, paste, leave) before the terminal sees them. Returns its search
 * addon.
 */
export function equip(term: Terminal, host: HTMLElement, actions: ToolActions): SearchAddon {
  const search = new SearchAddon()
  term.loadAddon(search)
  term.loadAddon(new WebLinksAddon())
  // On the mouse's release, not on every selection change: a find selects its match too, and
  // that should not replace what the user copied.
  host.addEventListener('mouseup', () => copy(term.getSelection()))
  term.attachCustomKeyEventHandler((event) => {
    const jump = actions.jump && commandJumpOf(event)
    if (jump) {
      event.preventDefault()
      actions.jump!(jump)
      return false
    }
    const own = isLeaveKey(event) || isKey(event, 'f') || isKey(event, 'c') || isKey(event, 'v')
    if (!own) return true
    // Ctrl+Shift+V would also paste as the browser's "paste as plain text", a second time.
    event.preventDefault()
    if (isLeaveKey(event)) actions.leave()
    else if (isKey(event, 'f')) actions.find()
    else if (isKey(event, 'c')) copy(term.getSelection())
    else
      void navigator.clipboard?.readText().then(
        (text) => term.paste(text),
        () => {},
      )
    return false
  })
  return search
}
