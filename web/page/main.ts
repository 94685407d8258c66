/**
 * The bundled page: sign in with a token (kept in sessionStorage for this tab only, never in the
 * address), then workspaces and sessions on the left (live via the registry watch) and the chosen
 * session's terminals on the right. The address names only the open session and terminal
 * (`#/s/<session>/t/<terminal>`), so a reload comes back to the same screen.
 */
import type { Workspace } from '../../schema/wire/registry.ts'
import { ApiError, TermkeepClient } from '../client/api.ts'
import { watchRegistry } from '../client/registry.ts'
import { failure, fill, h } from './dom.ts'
import { SessionView } from './session-view.ts'
import { Sidebar } from './sidebar.ts'

const TOKEN_KEY = 'termkeep.token'
const root = document.getElementById('app')!

interface Route {
  sessionId?: string
  terminalId?: string
}

function parseRoute(): Route {
  const match = /^#\/s\/([\w-]{1,128})(?:\/t\/([\w-]{1,128}))?$/.exec(location.hash)
  return match ? { sessionId: match[1], terminalId: match[2] } : {}
}

function setRoute(route: Route): void {
  const hash = route.sessionId ? `#/s/${route.sessionId}${route.terminalId ? `/t/${route.terminalId}` : ''}` : ''
  if (location.hash !== hash) history.replaceState(null, '', hash || location.pathname)
}

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
    h('p', { class: 'muted' }, '`npm start` prints an admin token the first time; mint others with `npx termkeep token create`.'),
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
  let session: SessionView | undefined
  const status = h('span', { class: 'status muted', role: 'status' })
  const signOut = h('button', { type: 'button', class: 'small' }, 'Sign out')
  const main = h('main', { class: 'content', id: 'content', tabindex: '-1' })

  const openSession = (sessionId: string, terminalId?: string, create = false) => {
    if (session?.sessionId !== sessionId) {
      session?.dispose()
      session = new SessionView(client, sessionId, {
        opened: (tid) => setRoute({ sessionId, terminalId: tid }),
      })
      fill(main, session.element)
      void session.load(terminalId).then(() => (create ? session?.createTerminal() : undefined))
    } else if (terminalId) {
      session.open(terminalId)
    }
    setRoute({ sessionId, terminalId })
    sidebar.select(sessionId)
  }

  const sidebar = new Sidebar(client, {
    openSession: (sid) => openSession(sid),
    startSession: async (workspace: Workspace) => {
      try {
        const record = await client.createSession(workspace.path)
        openSession(record.id, undefined, true)
      } catch (error) {
        status.textContent = failure('Could not start a session', error)
      }
    },
  })

  signOut.addEventListener('click', () => {
    watch.abort()
    session?.dispose()
    sessionStorage.removeItem(TOKEN_KEY)
    setRoute({})
    signInScreen()
  })

  fill(
    root,
    h('a', { class: 'skip', href: '#content' }, 'Skip to the terminal'),
    h('header', { class: 'top' }, h('h1', {}, 'termkeep'), status, signOut),
    h('div', { class: 'layout' }, sidebar.element, main),
  )
  fill(main, h('p', { class: 'muted hint' }, 'Choose a session on the left, or add a workspace and start a session in it.'))

  void watchRegistry(
    client,
    (registry) => sidebar.update(registry),
    (error) => {
      if (error.status === 401) {
        sessionStorage.removeItem(TOKEN_KEY)
        signInScreen('The token is no longer accepted; sign in again.')
      } else {
        status.textContent = `Workspaces unavailable: ${error.message}`
      }
    },
    watch.signal,
    (live) => (status.textContent = live ? '' : 'Reconnecting…'),
  )

  const route = parseRoute()
  if (route.sessionId)
    openSession(route.sessionId, route.terminalId)

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
