/**
 * A session's workflow runs, newest first: each run's status and result, and each member (one
 * agent() call) with its state and a link that opens its terminal here (follow it, take it over
 * while the run goes on). Running runs can be cancelled. Re-read often while a run is going, rarely
 * otherwise; a token without `workflows:read` simply shows no panel.
 */
import type { RunMember, RunSummary } from '../../schema/wire/workflows.ts'
import { ApiError, type TermkeepClient } from '../client/api.ts'
import { failure, fill, h } from './dom.ts'
import { routeHash } from './route.ts'

/** Re-read this often while a run of the session is going, else this often. */
const BUSY_REFRESH_MS = 2_000
const IDLE_REFRESH_MS = 10_000
/** Runs shown (the newest); older ones stay in the API (GET …/workflows?before=). */
const RUNS_SHOWN = 10

export interface WorkflowsViewActions {
  /** A run or member changed: the session's terminal list has likely changed with it. */
  changed(): void
}

export class WorkflowsView {
  readonly element: HTMLElement
  readonly #list: HTMLElement
  readonly #status: HTMLElement
  #runs: RunSummary[] = []
  #key = ''
  #timer: ReturnType<typeof setTimeout> | undefined
  #disposed = false

  constructor(
    private readonly client: TermkeepClient,
    readonly sessionId: string,
    private readonly actions: WorkflowsViewActions,
  ) {
    this.#list = h('ol', { class: 'runs', 'aria-label': 'Workflow runs' })
    this.#status = h('p', { class: 'muted hint', role: 'status' })
    this.element = h(
      'details',
      { class: 'workflows', open: true },
      h('summary', {}, h('h2', { class: 'inline' }, 'Workflow runs')),
      this.#status,
      this.#list,
    )
    this.element.hidden = true
  }

  async refresh(): Promise<void> {
    clearTimeout(this.#timer)
    if (this.#disposed) return
    try {
      this.#runs = (await this.client.workflows(this.sessionId, { limit: RUNS_SHOWN })).runs
      this.element.hidden = this.#runs.length === 0
      this.#status.textContent = ''
      this.#render()
    } catch (error) {
      // Without workflows:read there is nothing to show here; anything else is worth saying.
      if (error instanceof ApiError && error.status === 403) return void (this.element.hidden = true)
      this.#status.textContent = failure('Could not list workflow runs', error)
    }
    const busy = this.#runs.some((run) => run.status === 'running')
    this.#timer = setTimeout(
      () => {
        if (document.visibilityState === 'visible') void this.refresh()
        else this.#timer = setTimeout(() => void this.refresh(), IDLE_REFRESH_MS)
      },
      busy ? BUSY_REFRESH_MS : IDLE_REFRESH_MS,
    )
  }

  dispose(): void {
    this.#disposed = true
    clearTimeout(this.#timer)
  }

  #render(): void {
    const key = JSON.stringify(this.#runs.map((r) => [r.id, r.status, r.members.map((m) => [m.seq, m.state])]))
    if (key === this.#key) return
    const first = this.#key === ''
    this.#key = key
    fill(this.#list, ...this.#runs.map((run) => this.#run(run)))
    if (!first) this.actions.changed()
  }

  #run(run: RunSummary): HTMLElement {
    const when = new Date(run.createdAt).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    const cancel =
      run.status === 'running' &&
      h(
        'button',
        { type: 'button', class: 'small danger', 'aria-label': `Cancel run ${run.id}`, onclick: () => void this.#cancel(run) },
        'Cancel',
      )
    const outcome = run.result?.error ? h('span', { class: 'muted' }, ` — ${run.result.error}`) : null
    return h(
      'li',
      { class: 'run', 'data-run-id': run.id, 'data-status': run.status },
      h(
        'div',
        { class: 'run-head' },
        h('span', { class: `state ${run.status === 'running' ? 'live' : ''}` }, run.status),
        ' ',
        h('code', {}, run.id),
        h('span', { class: 'muted' }, ` ${when} · ${run.members.length} agent${run.members.length === 1 ? '' : 's'}`),
        outcome,
        cancel,
      ),
      run.members.length > 0 && h('ul', { class: 'members' }, ...run.members.map((member) => this.#member(member))),
    )
  }

  #member(member: RunMember): HTMLElement {
    // The terminal's address: following it opens the terminal here (./route.ts).
    const link = h(
      'a',
      { href: routeHash({ sessionId: this.sessionId, terminalId: member.terminal }), class: 'member-terminal' },
      `#${member.seq} ${member.label}`,
    )
    const exit = member.exitCode === null ? '' : ` (exit ${member.exitCode})`
    return h(
      'li',
      { class: 'member', 'data-seq': String(member.seq), 'data-state': member.state },
      link,
      ' ',
      h('span', { class: `state ${member.state === 'running' ? 'live' : ''}` }, `${member.state}${exit}`),
    )
  }

  async #cancel(run: RunSummary): Promise<void> {
    if (!window.confirm(`Cancel run ${run.id}? Its agents' terminals are closed.`)) return
    this.#status.textContent = 'Cancelling…'
    try {
      await this.client.cancelWorkflow(this.sessionId, run.id, 'cancelled on the web page')
      this.#status.textContent = ''
    } catch (error) {
      this.#status.textContent = failure('Could not cancel', error)
    }
    await this.refresh()
  }
}
