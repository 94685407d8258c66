/**
 * The main area for one session: its terminals (live and ended) as tabs named after the program
 * in their foreground, with create, rename and close; its workflow runs; and the open terminal
 * below them. Each tab is a link to the terminal's address. A session opened without a terminal
 * opens its first live one, or, when nothing runs any more (after a restart), the last screen of
 * the terminal that ended last, read-only, with every ended terminal's tab in view.
 */
import { DEFAULT_COLS, DEFAULT_ROWS } from '../../schema/limits.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { randomId } from '../../common/crypto.ts'
import type { TermkeepClient } from '../client/api.ts'
import { isLive, sessionLabel, terminalName } from '../client/labels.ts'
import { failure, fill, h } from './dom.ts'
import type { SessionIndex } from './session-index.ts'
import { MARKER_TEXT } from './sidebar.ts'
import { attachHint } from './hints.ts'
import { terminalTab } from './terminal-tab.ts'
import { TerminalView } from './terminal-view.ts'
import { WorkflowsView } from './workflows-view.ts'

/** The terminal list has no watch stream; it is re-read this often while the page is visible. */
const TERMINAL_LIST_REFRESH_MS = 5_000

export interface SessionViewActions {
  /** The view opened a terminal the address does not name yet: name it, in place of the current
   * entry (`replace`, a choice the page made) or as a new one (the user made the terminal). */
  opened(terminalId: string, replace: boolean): void
}

export class SessionView {
  readonly element: HTMLElement
  #tabs: HTMLElement
  #banner: HTMLElement
  #stage: HTMLElement
  #title: HTMLElement
  #summary: HTMLElement
  #terminals: TerminalInfo[] = []
  #view: TerminalView | undefined
  #disposed = false
  #tabsKey = ''
  /** Ended terminals (exited, closed, retired) other than the open one are folded away unless
   * asked, or unless nothing runs any more (then they are what the session has to show). */
  #showEnded = false
  /** Terminals this window closed: their end says so. */
  readonly #closedHere = new Set<string>()
  #attachHint: HTMLElement
  readonly #workflows: WorkflowsView
  #poll = setInterval(() => {
    if (document.visibilityState === 'visible') void this.refresh()
  }, TERMINAL_LIST_REFRESH_MS)
  #unsubscribe: () => void

  constructor(
    private readonly client: TermkeepClient,
    readonly sessionId: string,
    private readonly index: SessionIndex,
    private readonly actions: SessionViewActions,
  ) {
    const create = h('button', { type: 'button', class: 'primary', id: 'new-terminal' }, 'New terminal')
    create.addEventListener('click', () => void this.createTerminal())
    this.#tabs = h('ul', { class: 'terminals', 'aria-label': 'Terminals' })
    this.#banner = h('p', { class: 'banner', role: 'status', 'aria-live': 'polite' })
    this.#stage = h('div', { class: 'stage' })
    this.#attachHint = h('p', { class: 'muted hint attach-hint' })
    this.#workflows = new WorkflowsView(client, sessionId, { changed: () => void this.refresh() })
    this.#title = h('h2', { id: 'session-title' }, sessionId)
    this.#summary = h('span', { class: 'muted session-summary' })
    this.element = h(
      'section',
      { class: 'session-view', 'aria-labelledby': 'session-title' },
      h('header', { class: 'session-head' }, h('div', {}, this.#title, ' ', this.#summary), create),
      this.#tabs,
      this.#workflows.element,
      this.#banner,
      this.#stage,
      this.#attachHint,
      h(
        'p',
        { class: 'muted hint' },
        h('kbd', {}, 'Ctrl'),
        '+',
        h('kbd', {}, 'Shift'),
        '+',
        h('kbd', {}, 'Home'),
        ' moves focus out of the terminal; ',
        h('kbd', {}, 'Ctrl'),
        '+',
        h('kbd', {}, 'Shift'),
        '+',
        h('kbd', {}, 'F'),
        ' finds in its scrollback; selecting copies; ',
        h('kbd', {}, 'Ctrl'),
        '+',
        h('kbd', {}, 'Shift'),
        '+',
        h('kbd', {}, 'V'),
        ' pastes; ',
        h('kbd', {}, 'Ctrl'),
        '+',
        h('kbd', {}, 'Shift'),
        '+',
        h('kbd', {}, '↑'),
        ' / ',
        h('kbd', {}, '↓'),
        ' jump between commands.',
      ),
    )
    this.#unsubscribe = index.subscribe(() => this.#drawHead())
    this.#drawHead()
  }

  /** Loads the terminal list and opens `terminalId`, or the one a person would expect. */
  async load(terminalId?: string): Promise<void> {
    void this.#workflows.refresh()
    await this.refresh()
    if (this.#disposed) return
    const chosen = terminalId ?? this.#expected()?.id
    if (!chosen) return
    this.open(chosen)
    if (!terminalId) this.actions.opened(chosen, true)
  }

  /** The first live terminal, else the one that ended last. */
  #expected(): TerminalInfo | undefined {
    return this.#terminals.find(isLive) ?? [...this.#terminals].sort((a, b) => b.updatedAt - a.updatedAt)[0]
  }

  async refresh(): Promise<void> {
    try {
      this.#terminals = await this.client.terminals(this.sessionId)
      this.index.setTerminals(this.sessionId, this.#terminals)
      this.#renderTabs()
    } catch (error) {
      this.#say(failure('Could not list terminals', error))
    }
  }

  async createTerminal(): Promise<string | undefined> {
    const id = randomId('t')
    const size = this.#stage.getBoundingClientRect()
    // A first guess from the stage size; the view fits precisely once it is open.
    const cols = Math.max(20, Math.min(250, Math.floor(size.width / 8.5) || DEFAULT_COLS))
    const rows = Math.max(5, Math.min(100, Math.floor(size.height / 17) || DEFAULT_ROWS))
    try {
      await this.client.createTerminal(this.sessionId, id, { cols, rows })
      await this.refresh()
      // Made here, so its size follows this window from the start.
      this.open(id, true)
      this.actions.opened(id, false)
      return id
    } catch (error) {
      this.#say(failure('Could not start a terminal', error))
      return undefined
    }
  }

  /** Opens a terminal (nothing happens when it is the open one). `fit`: its size follows this
   * window at once, as for a terminal this window made. */
  open(terminalId: string, fit = false): void {
    if (this.#disposed || this.#view?.terminalId === terminalId) return
    this.#view?.dispose()
    this.#say('')
    const view = new TerminalView(
      this.client,
      this.sessionId,
      terminalId,
      {
        info: (info) => {
          const at = this.#terminals.findIndex((t) => t.id === info.id)
          if (at === -1) this.#terminals.push(info)
          else this.#terminals[at] = info
          this.index.setTerminals(this.sessionId, [...this.#terminals])
          this.#renderTabs()
        },
        mode: (_mode, message) => this.#say(message),
        leave: () => this.#tabs.querySelector<HTMLElement>('a.open[aria-current]')?.focus(),
      },
      { fit, info: this.#terminals.find((t) => t.id === terminalId), closedHere: () => this.#closedHere.has(terminalId) },
    )
    this.#view = view
    fill(this.#stage, view.element)
    view.start()
    view.focus()
    this.#renderTabs()
  }

  get view(): TerminalView | undefined {
    return this.#view
  }

  dispose(): void {
    this.#disposed = true
    clearInterval(this.#poll)
    this.#unsubscribe()
    this.#workflows.dispose()
    this.#view?.dispose()
  }

  #say(message: string): void {
    this.#banner.textContent = message
    this.#banner.hidden = message === ''
    if (message && this.#view?.mode === 'read-only') {
      const view = this.#view
      this.#banner.append(' ', h('button', { type: 'button', class: 'small', onclick: () => view.takeControl() }, 'Take control'))
    }
  }

  /** The heading: the session's name (or directory), what runs in it and its marker, its directory. */
  #drawHead(): void {
    const session = this.index.session(this.sessionId)
    if (!session) return
    const label = sessionLabel(session, this.#terminals)
    this.#title.textContent = label.name
    this.#title.title = label.detail
    const running = label.running ? `${label.running} · ` : ''
    this.#summary.textContent = `${running}${MARKER_TEXT[label.marker]} · ${session.cwd}`
    this.element.dataset.marker = label.marker
  }

  async #rename(info: TerminalInfo): Promise<void> {
    const title = window.prompt('New title for this terminal', terminalName(info))
    if (title === null) return
    try {
      await this.client.renameTerminal(this.sessionId, info.id, title)
      await this.refresh()
    } catch (error) {
      this.#say(failure('Could not rename', error))
    }
  }

  async #close(info: TerminalInfo): Promise<void> {
    if (!window.confirm(`Close “${terminalName(info)}”? Its processes are ended.`)) return
    this.#closedHere.add(info.id)
    try {
      await this.client.closeTerminal(this.sessionId, info.id)
      await this.refresh()
    } catch (error) {
      this.#closedHere.delete(info.id)
      this.#say(failure('Could not close', error))
    }
  }

  /** Re-renders the tabs when they changed, keeping keyboard focus on the same control. */
  #renderTabs(): void {
    this.#drawHead()
    const key = JSON.stringify([
      this.#view?.terminalId,
      this.#showEnded,
      this.#terminals.map((t) => [t.id, t.title, t.state, t.foregroundCommand, t.closedAt, t.cwd]),
    ])
    if (key === this.#tabsKey) return
    this.#tabsKey = key
    const focused =
      document.activeElement instanceof HTMLElement && this.#tabs.contains(document.activeElement) ? document.activeElement : undefined
    const focusedTab = focused?.closest<HTMLElement>('.terminal-tab')?.dataset.terminalId
    const focusedIndex = focused ? [...(focused.parentElement?.children ?? [])].indexOf(focused) : -1
    this.#drawTabs()
    if (focusedTab === undefined) return
    const tab = this.#tabs.querySelector<HTMLElement>(`.terminal-tab[data-terminal-id="${CSS.escape(focusedTab)}"]`)
    ;((tab?.children[focusedIndex] ?? tab?.querySelector('a, button')) as HTMLElement | undefined)?.focus()
  }

  #drawTabs(): void {
    this.#drawAttachHint()
    if (this.#terminals.length === 0) {
      fill(this.#tabs, h('li', { class: 'muted' }, 'No terminals yet — press “New terminal”.'))
      return
    }
    const current = this.#view?.terminalId
    const anyLive = this.#terminals.some(isLive)
    const folded = anyLive ? this.#terminals.filter((t) => !isLive(t) && t.id !== current) : []
    const shown = this.#showEnded ? this.#terminals : this.#terminals.filter((t) => !folded.includes(t))
    const toggle =
      folded.length > 0 &&
      h(
        'li',
        { class: 'ended-toggle' },
        h(
          'button',
          {
            type: 'button',
            class: 'small',
            'aria-expanded': String(this.#showEnded),
            onclick: () => {
              this.#showEnded = !this.#showEnded
              this.#renderTabs()
            },
          },
          this.#showEnded ? `Hide ${folded.length} ended` : `${folded.length} ended…`,
        ),
      )
    const actions = { rename: (info: TerminalInfo) => void this.#rename(info), close: (info: TerminalInfo) => void this.#close(info) }
    fill(
      this.#tabs,
      ...shown.map((info) => terminalTab(info, { current: info.id === current, closedHere: this.#closedHere.has(info.id) }, actions)),
      toggle,
    )
  }

  /** The open live terminal's CLI command, to reach it from a shell. */
  #drawAttachHint(): void {
    const info = this.#terminals.find((t) => t.id === this.#view?.terminalId)
    if (!info || !isLive(info)) return fill(this.#attachHint)
    fill(this.#attachHint, ...attachHint(this.sessionId, info.id))
  }
}
