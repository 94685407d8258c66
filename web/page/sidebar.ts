/**
 * The navigation column: workspaces and their sessions in the user's order, live from the registry
 * watch; a form to add a workspace by directory path; per workspace, buttons to start a session,
 * rename it and remove it from the list; per session, archive (archived ones fold away behind a
 * toggle, with unarchive). Each session is a link to its address, labelled by its name or
 * directory, what runs in it, and whether anything still does (web/client/labels.ts).
 */
import type { Host } from '../../schema/wire/hosts.ts'
import type { Workspace, WorkspaceList } from '../../schema/wire/registry.ts'
import type { TermkeepClient } from '../client/api.ts'
import { sessionLabel } from '../client/labels.ts'
import { failure, fill, h } from './dom.ts'
import { groupByHost, hostHead, hostState, showsHosts } from './host-groups.ts'
import { routeHash } from './route.ts'
import type { SessionIndex } from './session-index.ts'

export interface SidebarActions {
  startSession(workspace: Workspace): Promise<void>
}

/** The words beside a session's marker (its colour alone would not say it). */
export const MARKER_TEXT = {
  live: 'live',
  unreachable: 'unreachable',
  ended: 'ended',
  retired: 'retired',
  empty: 'no terminals',
} as const

export class Sidebar {
  readonly element: HTMLElement
  #list: HTMLElement
  #error: HTMLElement
  #registry: WorkspaceList | undefined
  #hosts: Host[] = []
  #hostChoice: HTMLSelectElement
  #selected: string | undefined
  /** Workspaces whose archived sessions are shown. */
  #showArchived = new Set<string>()

  constructor(
    private readonly client: TermkeepClient,
    private readonly index: SessionIndex,
    private readonly actions: SidebarActions,
  ) {
    index.subscribe(() => this.#render())
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
    // Shown with several hosts: the directory's host (the same path on two hosts is two workspaces).
    this.#hostChoice = h('select', { id: 'workspace-host', name: 'host', 'aria-label': 'Host of the directory', hidden: true })
    const form = h(
      'form',
      { class: 'add-workspace', 'aria-label': 'Add a workspace' },
      h('label', { for: 'workspace-path' }, 'Add a workspace (directory path)'),
      h('div', { class: 'row' }, input, this.#hostChoice, h('button', { type: 'submit' }, 'Add')),
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
    this.#watchShown()
    this.#render()
  }

  /** The index keeps the sessions on screen labelled: unarchived ones, and archived ones shown. */
  #watchShown(): void {
    if (!this.#registry) return
    const archived = new Set(this.#registry.archivedSessionIds)
    this.index.watch(
      this.#registry.workspaces.flatMap((w) => w.sessionIds.filter((id) => !archived.has(id) || this.#showArchived.has(w.id))),
    )
  }

  /** The hosts, as read (client/hosts.ts). */
  updateHosts(hosts: Host[]): void {
    this.#hosts = hosts
    const chosen = this.#hostChoice.value
    fill(this.#hostChoice, ...hosts.map((host) => h('option', { value: host.id, selected: host.id === chosen }, host.name)))
    this.#hostChoice.hidden = hosts.length < 2
    this.#render()
  }

  select(sessionId: string | undefined): void {
    this.#selected = sessionId
    this.#render()
  }

  async #add(input: HTMLInputElement): Promise<void> {
    const path = input.value.trim()
    if (!path) return
    this.#error.textContent = ''
    try {
      await this.client.createWorkspace(path, undefined, this.#hostChoice.hidden ? undefined : this.#hostChoice.value)
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

  /** A session's link: its name or directory, what runs in it, and its marker. */
  #sessionLink(id: string): HTMLElement {
    const session = this.index.session(id)
    const terminals = this.index.terminals(id)
    const host = session?.host ? this.#hosts.find((h) => h.id === session.host) : undefined
    const label = session && sessionLabel(session, terminals ?? undefined, host !== undefined && hostState(host) !== 'up')
    const marker = terminals === undefined || terminals === null || !label ? undefined : label.marker
    return h(
      'a',
      {
        class: 'session',
        href: routeHash({ sessionId: id }),
        'data-session-id': id,
        'data-key': `open:${id}`,
        'data-marker': marker,
        title: label?.detail ?? id,
        'aria-current': id === this.#selected ? 'page' : undefined,
      },
      h('span', { class: 'session-name' }, label?.name ?? id),
      label?.running && h('span', { class: 'running' }, label.running),
      marker && h('span', { class: `marker marker-${marker}` }, MARKER_TEXT[marker]),
    )
  }

  #sessionName(id: string): string {
    const session = this.index.session(id)
    return session ? sessionLabel(session, undefined).name : id
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
    const draw = (workspace: Workspace) => this.#drawWorkspace(workspace, archived)
    if (!showsHosts(this.#hosts)) {
      fill(this.#list, ...this.#registry.workspaces.map(draw))
      return
    }
    const groups = groupByHost(this.#registry.workspaces, this.#hosts)
    fill(
      this.#list,
      ...groups.map(({ host, workspaces }) =>
        h(
          'li',
          { class: 'host-group', 'data-host-id': host?.id, 'data-host-state': host && hostState(host) },
          hostHead(host),
          h(
            'ul',
            { class: 'workspaces', 'aria-label': `Workspaces on ${host?.name ?? 'other hosts'}` },
            ...(workspaces.length > 0 ? workspaces.map(draw) : [h('li', { class: 'muted' }, 'No workspaces on this host.')]),
          ),
        ),
      ),
    )
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
        this.#sessionLink(id),
        isArchived
          ? small(`unarchive:${id}`, `Unarchive ${this.#sessionName(id)}`, 'Unarchive', () => this.#archive(id, false))
          : small(`archive:${id}`, `Archive ${this.#sessionName(id)}`, 'Archive', () => this.#archive(id, true)),
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
              this.#watchShown()
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
