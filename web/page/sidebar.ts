/**
 * The navigation column: workspaces and their sessions in the user's order, live from the registry
 * watch; a form to add a workspace by directory path; per workspace, buttons to start a session,
 * rename it and remove it from the list; per session, archive (archived ones fold away behind a
 * toggle, with unarchive).
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
  /** Workspaces whose archived sessions are shown. */
  #showArchived = new Set<string>()

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
    )
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      void this.#add(input)
    })
    this.#list = h('ul', { class: 'workspaces', 'aria-label': 'Workspaces' })
    this.element = h(
      'nav',
      { class: 'sidebar', 'aria-label': 'Workspaces and sessions' },
      h('h2', {}, 'Workspaces'),
      this.#list,
      this.#error,
      form,
    )
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

  /** Runs a registry change; the registry watch shows its result, a failure is said in words. */
  async #change(doing: string, action: () => Promise<unknown>): Promise<void> {
    this.#error.textContent = ''
    try {
      await action()
    } catch (error) {
      this.#error.textContent = failure(doing, error)
    }
  }

  #rename(workspace: Workspace): Promise<void> {
    const title = window.prompt('New name for this workspace', workspace.title)
    if (title === null) return Promise.resolve()
    return this.#change('Could not rename the workspace', () => this.client.renameWorkspace(workspace.id, title))
  }

  #remove(workspace: Workspace): Promise<void> {
    const question = `Remove “${workspace.title}” from the list? Nothing on disk changes, and its sessions and terminals stay as they are.`
    if (!window.confirm(question)) return Promise.resolve()
    return this.#change('Could not remove the workspace', () => this.client.removeWorkspace(workspace.id))
  }

  #archive(sessionId: string, archived: boolean): Promise<void> {
    return this.#change(archived ? 'Could not archive the session' : 'Could not unarchive the session', () =>
      this.client.archiveSession(sessionId, archived),
    )
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
    const focused =
      document.activeElement instanceof HTMLElement && this.#list.contains(document.activeElement) ? document.activeElement : undefined
    const key = focused?.dataset.key
    this.#draw()
    if (key === undefined) return
    this.#list.querySelector<HTMLElement>(`[data-key="${CSS.escape(key)}"]`)?.focus()
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
    fill(this.#list, ...this.#registry.workspaces.map((workspace) => this.#drawWorkspace(workspace, archived)))
  }

  #drawWorkspace(workspace: Workspace, archived: Set<string>): HTMLElement {
    /** A small button that stays disabled while its action runs; `label` names it for screen readers. */
    const small = (key: string, label: string | undefined, text: string, onclick: () => Promise<void>, danger = false) => {
      const button = h(
        'button',
        { type: 'button', class: danger ? 'small danger' : 'small', 'data-key': key, 'aria-label': label, title: label },
        text,
      )
      button.addEventListener('click', () => {
        button.disabled = true
        void onclick().finally(() => (button.disabled = false))
      })
      return button
    }
    const start = small(`start:${workspace.id}`, undefined, '+ Session', () => this.actions.startSession(workspace))
    start.title = `Start a session in ${workspace.path}`
    const live = workspace.sessionIds.filter((id) => !archived.has(id))
    const hidden = workspace.sessionIds.filter((id) => archived.has(id))
    const expanded = this.#showArchived.has(workspace.id)
    const sessionRow = (id: string, isArchived: boolean) =>
      h(
        'li',
        { class: isArchived ? 'archived' : undefined },
        h(
          'button',
          {
            type: 'button',
            class: 'session',
            'data-session-id': id,
            'data-key': `open:${id}`,
            title: id,
            'aria-current': id === this.#selected ? 'page' : undefined,
            onclick: () => this.actions.openSession(id),
          },
          this.#sessionTitle(id),
        ),
        isArchived
          ? small(`unarchive:${id}`, `Unarchive ${this.#sessionTitle(id)}`, 'Unarchive', () => this.#archive(id, false))
          : small(`archive:${id}`, `Archive ${this.#sessionTitle(id)}`, 'Archive', () => this.#archive(id, true)),
      )
    const toggle =
      hidden.length > 0 &&
      h(
        'li',
        { class: 'archived-toggle' },
        h(
          'button',
          {
            type: 'button',
            class: 'small',
            'data-key': `archived:${workspace.id}`,
            'aria-expanded': String(expanded),
            onclick: () => {
              if (expanded) this.#showArchived.delete(workspace.id)
              else this.#showArchived.add(workspace.id)
              this.#render()
            },
          },
          expanded ? `Hide ${hidden.length} archived` : `${hidden.length} archived…`,
        ),
      )
    return h(
      'li',
      { class: 'workspace', 'data-workspace-id': workspace.id },
      h('div', { class: 'workspace-head' }, h('span', { class: 'title', title: workspace.path }, workspace.title), start),
      h(
        'div',
        { class: 'workspace-foot' },
        h('span', { class: 'path muted', title: workspace.path }, workspace.path),
        small(`rename:${workspace.id}`, `Rename ${workspace.title}`, 'Rename', () => this.#rename(workspace)),
        small(`remove:${workspace.id}`, `Remove ${workspace.title} from the list`, 'Remove', () => this.#remove(workspace), true),
      ),
      h(
        'ul',
        { class: 'sessions', 'aria-label': `Sessions in ${workspace.title}` },
        ...live.map((id) => sessionRow(id, false)),
        toggle,
        ...(expanded ? hidden.map((id) => sessionRow(id, true)) : []),
      ),
    )
  }
}
