/**
 * The bundled page: sign in with a token (kept in sessionStorage for this tab only, never in the
 * address), then workspaces and sessions on the left (live via the registry watch) and the chosen
 * session's terminals on the right. Every session and terminal has an address
 * (`#/s/<session>/t/<terminal>`, ./route.ts): links, pasted addresses, Back and Forward switch the
 * view, and a reload comes back to the same terminal.
 */
import type { Workspace } from '../../schema/wire/registry.ts'
import { ApiError, TermkeepClient } from '../client/api.ts'
import { pollHosts } from '../client/hosts.ts'
import { watchRegistry } from '../client/registry.ts'
import { failure, fill, h } from './dom.ts'
import { signInHint } from './hints.ts'
import { onRouteChange, parseRoute, type Route, setRoute } from './route.ts'
import { SessionIndex } from './session-index.ts'
import { SessionView } from './session-view.ts'
import { Sidebar } from './sidebar.ts'

const TOKEN_KEY = 'termkeep.token'
const root = document.getElementById('app')!

function signInScreen(message = ''): void {
  const input = h('input', { id: 'token', name: 'token', type: 'password', required: true, autocomplete: 'off', spellcheck: 'false' })
  const error = h('p', { class: 'error', role: 'alert' }, message)
  const form = h(
    'form',
    { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'termkeep'),
    h('label', { for: 'token' }, 'Access token'),
    input,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    error,
    h('p', { class: 'muted sign-in-hint' }, ...signInHint()),
  )
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const token = input.value.trim()
    error.textContent = ''
    const client = new TermkeepClient({ url: '', token })
    try {
      await client.registry()
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return void (error.textContent = 'That token was not accepted.')
      if (!(e instanceof ApiError)) return void (error.textContent = failure('Could not sign in', e))
    }
    sessionStorage.setItem(TOKEN_KEY, token)
    shell(client)
  })
  fill(root, h('main', { class: 'centered' }, form))
  input.focus()
}

function shell(client: TermkeepClient): void {
  const watch = new AbortController()
  const index = new SessionIndex(client)
  let session: SessionView | undefined
  const status = h('span', { class: 'status muted', role: 'status' })
  const signOut = h('button', { type: 'button', class: 'small' }, 'Sign out')
  const main = h('main', { class: 'content', id: 'content', tabindex: '-1' })
  const nothingOpen = () =>
    fill(main, h('p', { class: 'muted hint' }, 'Choose a session on the left, or add a workspace and start a session in it.'))

  /** Shows a route; idempotent (a move may arrive as both popstate and hashchange). */
  const show = (route: Route, create = false) => {
    if (!route.sessionId) {
      session?.dispose()
      session = undefined
      nothingOpen()
    } else if (session?.sessionId !== route.sessionId) {
      session?.dispose()
      const sessionId = route.sessionId
      const view = new SessionView(client, sessionId, index, {
        opened: (terminalId, replace) => {
          if (session === view) setRoute({ sessionId, terminalId }, replace)
        },
      })
      session = view
      fill(main, view.element)
      void view.load(route.terminalId).then(() => (create && session === view ? view.createTerminal() : undefined))
    } else if (route.terminalId) {
      session.open(route.terminalId)
    }
    sidebar.select(route.sessionId)
  }

  const sidebar = new Sidebar(client, index, {
    startSession: async (workspace: Workspace) => {
      try {
        // In the workspace: on its host, in its directory.
        const record = await client.createSessionIn(workspace.id)
        setRoute({ sessionId: record.id })
        show({ sessionId: record.id }, true)
      } catch (error) {
        status.textContent = failure('Could not start a session', error)
      }
    },
  })

  signOut.addEventListener('click', () => {
    watch.abort()
    index.stop()
    session?.dispose()
    sessionStorage.removeItem(TOKEN_KEY)
    setRoute({}, true)
    signInScreen()
  })

  fill(
    root,
    h('a', { class: 'skip', href: '#content', onclick: skipToContent }, 'Skip to the terminal'),
    h('header', { class: 'top' }, h('h1', {}, 'termkeep'), status, signOut),
    h('div', { class: 'layout' }, sidebar.element, main),
  )
  nothingOpen()

  void watchRegistry(
    client,
    (registry) => sidebar.update(registry),
    (error) => {
      if (error.status === 401) {
        sessionStorage.removeItem(TOKEN_KEY)
        index.stop()
        signInScreen('The token is no longer accepted; sign in again.')
      } else {
        status.textContent = `Workspaces unavailable: ${error.message}`
      }
    },
    watch.signal,
    (live) => (status.textContent = live ? '' : 'Reconnecting…'),
  )

  void pollHosts(client, (hosts) => sidebar.updateHosts(hosts), watch.signal)

  onRouteChange(show, watch.signal)
  show(parseRoute(location.hash))

  // For tests and curious users: the open terminal's buffer, read-only.
  ;(globalThis as Record<string, unknown>).__termkeep = {
    view: () => session?.view,
    screenText: () => {
      const term = session?.view?.term
      if (!term) return ''
      const buffer = term.buffer.active
      const lines: string[] = []
      for (let y = 0; y < term.rows; y++) lines.push(buffer.getLine(buffer.viewportY + y)?.translateToString(true) ?? '')
      return lines.join('\n')
    },
    bufferText: () => {
      const buffer = session?.view?.term.buffer.active
      if (!buffer) return ''
      const lines: string[] = []
      for (let y = 0; y < buffer.length; y++) lines.push(buffer.getLine(y)?.translateToString(true) ?? '')
      return lines.join('\n')
    },
  }
}

const saved = sessionStorage.getItem(TOKEN_KEY)
if (saved) shell(new TermkeepClient({ url: '', token: saved }))
else signInScreen()

/** The skip link moves focus to the content without changing the address (it names a terminal). */
function skipToContent(event: Event): void {
  event.preventDefault()
  document.getElementById('content')?.focus()
}
