/**
 * The navigation column: workspaces and their sessions in the user's order, live from the registry
 * watch; a form to add a workspace by directory path; a button per workspace to start a session.
 */
import type { Workspace, WorkspaceList } from '../../schema/wire/registry.ts'
import { sessionLabel, type TermkeepClient } from '../client/api.ts'
import { failure, fill, h } from './dom.ts'

export interface SidebarActions {
  openSession(sessionId: string): void
  startSession(workspace: Workspace): Promise<void>
}

export class Sidebar {
  readonly element: HTMLElement
  #list: HTMLElement
  #error: HTMLElement
  #registry: WorkspaceList | undefined
  #titles = new Map<string, string>()
  #selected: string | undefined

  constructor(
    private readonly client: TermkeepClient,
    private readonly actions: SidebarActions,
  ) {
    const input = h('input', {
      id: 'workspace-path',
      name: 'path',
      type: 'text',
      required: true,
      placeholder: '/home/me/project',
      autocomplete: 'off',
      spellcheck: 'false',
    })
    this.#error = h('p', { class: 'error', role: 'alert' })
    const form = h(
      'form',
      { class: 'add-workspace', 'aria-label': 'Add a workspace' },
      h('label', { for: 'workspace-path' }, 'Add a workspace (directory path)'),
      h('div', { class: 'row' }, input, h('button', { type: 'submit' }, 'Add')),
      this.#error,
    )
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      void this.#add(input)
    })
    this.#list = h('ul', { class: 'workspaces', 'aria-label': 'Workspaces' })
    this.element = h('nav', { class: 'sidebar', 'aria-label': 'Workspaces and sessions' }, h('h2', {}, 'Workspaces'), this.#list, form)
    this.#render()
  }

  update(registry: WorkspaceList): void {
    this.#registry = registry
    this.#render()
  }

  select(sessionId: string | undefined): void {
    this.#selected = sessionId
    this.#render()
  }

  /** Remembers a session's title (from the session record) for display. */
  setTitle(sessionId: string, title: string): void {
    this.#titles.set(sessionId, title)
    this.#render()
  }

  async #add(input: HTMLInputElement): Promise<void> {
    const path = input.value.trim()
    if (!path) return
    this.#error.textContent = ''
    try {
      await this.client.createWorkspace(path)
      input.value = ''
    } catch (error) {
      this.#error.textContent = failure('Could not add the workspace', error)
    }
  }

  #sessionTitle(sessionId: string): string {
    const known = this.#titles.get(sessionId)
    if (known !== undefined) return known
    this.#titles.set(sessionId, sessionId)
    this.client.session(sessionId).then(
      (s) => this.setTitle(sessionId, sessionLabel(s)),
      () => {},
    )
    return sessionId
  }

  /** Re-renders, keeping keyboard focus on the same control when it still exists. */
  #render(): void {
    const focused = document.activeElement instanceof HTMLElement && this.#list.contains(document.activeElement) ? document.activeElement : undefined
    const key = focused?.dataset.sessionId ?? focused?.dataset.startWorkspace
    this.#draw()
    if (key === undefined) return
    const again = this.#list.querySelector<HTMLElement>(`[data-session-id="${CSS.escape(key)}"], [data-start-workspace="${CSS.escape(key)}"]`)
    again?.focus()
  }

  #draw(): void {
    if (!this.#registry) {
      fill(this.#list, h('li', { class: 'muted' }, 'Loading…'))
      return
    }
    const archived = new Set(this.#registry.archivedSessionIds)
    if (this.#registry.workspaces.length === 0) {
      fill(this.#list, h('li', { class: 'muted' }, 'No workspaces yet. Add a directory below.'))
      return
    }
    fill(
      this.#list,
      ...this.#registry.workspaces.map((workspace) => {
        const sessions = workspace.sessionIds.filter((id) => !archived.has(id))
        const start = h(
          'button',
          { type: 'button', class: 'small', title: `Start a session in ${workspace.path}`, 'data-start-workspace': workspace.id },
          '+ Session',
        )
        start.addEventListener('click', () => {
          start.disabled = true
          void this.actions.startSession(workspace).finally(() => (start.disabled = false))
        })
        return h(
          'li',
          { class: 'workspace', 'data-workspace-id': workspace.id },
          h('div', { class: 'workspace-head' }, h('span', { class: 'title', title: workspace.path }, workspace.title), start),
          h('div', { class: 'path muted' }, workspace.path),
          h(
            'ul',
            { class: 'sessions', 'aria-label': `Sessions in ${workspace.title}` },
            ...sessions.map((id) =>
              h(
                'li',
                {},
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'session',
                    'data-session-id': id,
                    title: id,
                    'aria-current': id === this.#selected ? 'page' : undefined,
                    onclick: () => this.actions.openSession(id),
                  },
                  this.#sessionTitle(id),
                ),
              ),
            ),
          ),
        )
      }),
    )
  }
}
