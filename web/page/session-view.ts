/**
 * The main area for one session: its terminals (live and retired) with create, rename and close,
 * its workflow runs (each member links to its terminal), and the open terminal below them.
 */
import { DEFAULT_COLS, DEFAULT_ROWS } from '../../schema/limits.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { sessionLabel, type TermkeepClient } from '../client/api.ts'
import { randomId } from '../../common/crypto.ts'
import { failure, fill, h } from './dom.ts'
import { TerminalView } from './terminal-view.ts'
import { WorkflowsView } from './workflows-view.ts'

/** The terminal list has no watch stream; it is re-read this often while the page is visible. */
const TERMINAL_LIST_REFRESH_MS = 5_000

export interface SessionViewActions {
  /** Called when the open terminal changes, so the address can name it (never the token). */
  opened(terminalId: string | undefined): void
}

export class SessionView {
  readonly element: HTMLElement
  #tabs: HTMLElement
  #banner: HTMLElement
  #stage: HTMLElement
  #terminals: TerminalInfo[] = []
  #view: TerminalView | undefined
  #disposed = false
  #tabsKey = ''
  /** Ended terminals (exited, closed, retired) other than the open one are folded away unless asked. */
  #showEnded = false
  #attachHint: HTMLElement
  readonly #workflows: WorkflowsView
  #poll = setInterval(() => {
    if (document.visibilityState === 'visible') void this.refresh()
  }, TERMINAL_LIST_REFRESH_MS)

  constructor(
    private readonly client: TermkeepClient,
    readonly sessionId: string,
    private readonly actions: SessionViewActions,
  ) {
    const create = h('button', { type: 'button', class: 'primary', id: 'new-terminal' }, 'New terminal')
    create.addEventListener('click', () => void this.createTerminal())
    this.#tabs = h('ul', { class: 'terminals', 'aria-label': 'Terminals' })
    this.#banner = h('p', { class: 'banner', role: 'status', 'aria-live': 'polite' })
    this.#stage = h('div', { class: 'stage' })
    this.#attachHint = h('p', { class: 'muted hint attach-hint' })
    this.#workflows = new WorkflowsView(client, sessionId, { openTerminal: (tid) => this.open(tid), changed: () => void this.refresh() })
    const title = h('h2', { id: 'session-title' }, sessionId)
    const cwd = h('span', { class: 'muted path' })
    this.element = h(
      'section',
      { class: 'session-view', 'aria-labelledby': 'session-title' },
      h('header', { class: 'session-head' }, h('div', {}, title, ' ', cwd), create),
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
        ' moves focus out of the terminal.',
      ),
    )
    client.session(sessionId).then(
      (s) => {
        title.textContent = sessionLabel(s)
        cwd.textContent = s.cwd
      },
      () => {},
    )
  }

  /** Loads the terminal list and opens `terminalId` (or nothing). */
  async load(terminalId?: string): Promise<void> {
    void this.#workflows.refresh()
    await this.refresh()
    if (terminalId) this.open(terminalId)
  }

  async refresh(): Promise<void> {
    try {
      this.#terminals = await this.client.terminals(this.sessionId)
      this.#renderTabs()
    } catch (error) {
      this.#say(failure('Could not list terminals', error))
    }
  }

  async createTerminal(): Promise<void> {
    const id = randomId('t')
    const size = this.#stage.getBoundingClientRect()
    // A first guess from the stage size; the view fits precisely once it is open.
    const cols = Math.max(20, Math.min(250, Math.floor(size.width / 8.5) || DEFAULT_COLS))
    const rows = Math.max(5, Math.min(100, Math.floor(size.height / 17) || DEFAULT_ROWS))
    try {
      await this.client.createTerminal(this.sessionId, id, { cols, rows })
      await this.refresh()
      this.open(id)
    } catch (error) {
      this.#say(failure('Could not start a terminal', error))
    }
  }

  open(terminalId: string): void {
    if (this.#disposed) return
    this.#view?.dispose()
    const view = new TerminalView(this.client, this.sessionId, terminalId, {
      info: (info) => {
        const at = this.#terminals.findIndex((t) => t.id === info.id)
        if (at === -1) this.#terminals.push(info)
        else this.#terminals[at] = info
        this.#renderTabs()
      },
      mode: (_mode, message) => this.#say(message),
      leave: () => this.#tabs.querySelector<HTMLElement>('button.open[aria-current]')?.focus(),
    })
    this.#view = view
    fill(this.#stage, view.element)
    view.start()
    view.focus()
    this.actions.opened(terminalId)
    this.#renderTabs()
  }

  get view(): TerminalView | undefined {
    return this.#view
  }

  dispose(): void {
    this.#disposed = true
    clearInterval(this.#poll)
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

  async #rename(info: TerminalInfo): Promise<void> {
    const title = window.prompt('New title for this terminal', info.title)
    if (title === null) return
    try {
      await this.client.renameTerminal(this.sessionId, info.id, title)
      await this.refresh()
    } catch (error) {
      this.#say(failure('Could not rename', error))
    }
  }

  async #close(info: TerminalInfo): Promise<void> {
    if (!window.confirm(`Close “${info.title}”? Its processes are ended.`)) return
    try {
      await this.client.closeTerminal(this.sessionId, info.id)
      await this.refresh()
    } catch (error) {
      this.#say(failure('Could not close', error))
    }
  }

  /** Re-renders the tabs when they changed, keeping keyboard focus on the same control. */
  #renderTabs(): void {
    const key = JSON.stringify([
      this.#view?.terminalId,
      this.#showEnded,
      this.#terminals.map((t) => [t.id, t.title, t.state, t.foregroundCommand]),
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
    ;((tab?.children[focusedIndex] ?? tab?.querySelector('button')) as HTMLElement | undefined)?.focus()
  }

  #drawTabs(): void {
    this.#drawAttachHint()
    if (this.#terminals.length === 0) {
      fill(this.#tabs, h('li', { class: 'muted' }, 'No terminals yet — press “New terminal”.'))
      return
    }
    const current = this.#view?.terminalId
    const folded = this.#terminals.filter((t) => !isLive(t) && t.id !== current)
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
    fill(
      this.#tabs,
      ...shown.map((info) => {
        const live = isLive(info)
        return h(
          'li',
          { class: 'terminal-tab', 'data-terminal-id': info.id, 'data-state': info.state },
          h(
            'button',
            {
              type: 'button',
              class: 'open',
              'aria-current': info.id === current ? 'true' : undefined,
              onclick: () => this.open(info.id),
            },
            info.title || info.id,
            // The program in the foreground (as tmux's pane_current_command), when it says more
            // than the title does.
            live &&
              info.foregroundCommand &&
              info.foregroundCommand !== info.title &&
              h('span', { class: 'foreground', title: 'in the foreground' }, ` ${info.foregroundCommand}`),
            info.workflow && h('span', { class: 'state' }, ` agent #${info.workflow.seq}`),
            h('span', { class: `state ${live ? 'live' : ''}` }, ` ${info.state}`),
          ),
          live &&
            h(
              'button',
              { type: 'button', class: 'small', 'aria-label': `Rename ${info.title}`, onclick: () => void this.#rename(info) },
              'Rename',
            ),
          live &&
            h(
              'button',
              { type: 'button', class: 'small danger', 'aria-label': `Close ${info.title}`, onclick: () => void this.#close(info) },
              'Close',
            ),
        )
      }),
      toggle,
    )
  }

  /** The open live terminal's CLI command, to reach it from a shell. */
  #drawAttachHint(): void {
    const info = this.#terminals.find((t) => t.id === this.#view?.terminalId)
    if (!info || !isLive(info)) return fill(this.#attachHint)
    fill(this.#attachHint, 'From a shell: ', h('code', {}, `termkeep attach ${this.sessionId} ${info.id}`))
  }
}

function isLive(info: TerminalInfo): boolean {
  return info.state === 'starting' || info.state === 'running'
}
