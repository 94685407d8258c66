/**
 * The bundled page in real Chromium against the real Node API and a real sidecar process: sign in,
 * add a workspace, start a session (which opens a shell), type a coloured `printf`, see it, resize
 * the window, reload and see the same screen, stop the sidecar and see the persisted display.
 * Screenshots land in test-artifacts/.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { TermkeepClient } from '../../web/client/api.ts'
import { displayToLines, readDisplay } from '../../web/client/display.ts'
import { waitFor } from '../support/ports.ts'
import { startSidecar } from '../support/sidecar.ts'
import { startStallProxy, type StallProxy } from '../support/stall-proxy.ts'
import { launch, type Browser } from './chromium.ts'
import { startProxy, type Proxy } from './proxy.ts'
import { commandEntered, journalText, startStack, type Stack } from './stack.ts'

/** Typed into the shell; the output line it prints appears nowhere in the command line itself. */
const COLOUR_COMMAND = String.raw`printf '\033[31mRED\033[0m \033[44m BLUE-BG \033[0m %s\n' "$((6*7))"`
const COLOUR_OUTPUT = 'RED  BLUE-BG  42'

interface CellFacts {
  text: string
  fg: number
  fgPalette: boolean
  bg: number
  bgPalette: boolean
}

describe('web page (Chromium, full stack)', () => {
  let stack: Stack
  let browser: Browser
  let proxy: Proxy
  let stall: StallProxy
  let client: TermkeepClient
  let sessionId = ''
  let terminalId = ''

  const bufferText = () => browser.page.evaluate(() => (globalThis as any).__termkeep.bufferText() as string)
  const count = (text: string, needle: string) => text.split(needle).length - 1
  const type = async (line: string) => {
    await browser.page.keyboard.type(line)
    await browser.page.keyboard.press('Enter')
  }
  /** Waits until the screen ends with the shell's prompt (bash prints it last, after any mode changes). */
  const waitForPrompt = () =>
    browser.page.waitForFunction(() => /[#$]$/.test(((globalThis as any).__termkeep.screenText() as string).trimEnd()), undefined, {
      timeout: 10_000,
    })
  /** Ctrl-C, then wait for the shell's prompt, so what is typed next reaches the shell, not `cat`. */
  const interrupt = async () => {
    await browser.page.keyboard.press('Control+C')
    await browser.page.waitForFunction(
      () => /\^C\n.*[#$]$/.test(((globalThis as any).__termkeep.screenText() as string).trimEnd()),
      undefined,
      { timeout: 10_000 },
    )
  }
  const screenText = () => browser.page.evaluate(() => (globalThis as any).__termkeep.screenText() as string)
  const waitForScreen = (needle: string, timeout = 20_000) =>
    browser.page.waitForFunction((n) => ((globalThis as any).__termkeep?.screenText() ?? '').includes(n), needle, { timeout })
  /** The cell `offset` columns into the first buffer line (scrollback included) that contains `needle`, as xterm.js holds it. */
  const cellOf = (needle: string, offset = 0) =>
    browser.page.evaluate(
      ([n, dx]): CellFacts | undefined => {
        const term = (globalThis as any).__termkeep.view().term
        const buffer = term.buffer.active
        for (let y = 0; y < buffer.length; y++) {
          const line = buffer.getLine(y)
          const x = line?.translateToString(false).indexOf(n) ?? -1
          if (x === -1) continue
          const cell = line.getCell(x + dx)
          return {
            text: cell.getChars(),
            fg: cell.getFgColor(),
            fgPalette: cell.isFgPalette(),
            bg: cell.getBgColor(),
            bgPalette: cell.isBgPalette(),
          }
        }
        return undefined
      },
      [needle, offset] as const,
    )
  const info = () => client.terminal(sessionId, terminalId)

  beforeAll(async () => {
    stack = await startStack('browser')
    client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    // The browser reaches the API through a proxy the test can cut (network loss), and that
    // through one that can stall the sidecar under one request.
    stall = await startStallProxy(stack.api.url, () => stack.sidecar.pid)
    proxy = await startProxy(stall.url)
    browser = await launch()
  })
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail')
      await browser?.screenshot(`page-failed-${context.task.name.replace(/\W+/g, '-')}`).catch(() => {})
  })
  afterAll(async () => {
    await browser?.close()
    await proxy?.close()
    await stall?.close()
    await stack?.stop()
  })

  it('signs in with a token that never appears in the address', async () => {
    const { page } = browser
    await page.goto(proxy.url)
    await page.fill('#token', 'not-a-token')
    await page.click('form.sign-in button[type=submit]')
    await page.getByText('That token was not accepted.').waitFor()
    await page.fill('#token', stack.token)
    await page.click('form.sign-in button[type=submit]')
    await page.getByText('No workspaces yet').waitFor()
    expect(page.url()).not.toContain(stack.token)
  })

  it('adds a workspace and starts a session that opens a live shell', async () => {
    const { page } = browser
    // A path that is not a directory is refused with the server's message, in place.
    await page.fill('#workspace-path', `${stack.workspaceDir}/missing`)
    await page.keyboard.press('Enter')
    await waitFor(async () => ((await page.locator('.sidebar [role="alert"]').textContent()) ?? '').length > 0, 10_000, 'the refusal')
    expect(await page.locator('.workspace').count()).toBe(0)
    await page.fill('#workspace-path', stack.workspaceDir)
    await page.keyboard.press('Enter')
    const workspace = page.locator('.workspace', { hasText: stack.workspaceDir })
    await workspace.waitFor()
    await workspace.getByRole('button', { name: '+ Session' }).click()
    await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
    const route = /#\/s\/([\w-]+)\/t\/([\w-]+)$/.exec(page.url())
    expect(route).not.toBeNull()
    ;[, sessionId, terminalId] = route!
    expect(page.url()).not.toContain(stack.token)
    // The session is listed under its workspace, live from the registry watch.
    await workspace.locator(`[data-session-id="${sessionId}"]`).waitFor()
    expect((await info()).state).toBe('running')
  })

  it('types a coloured printf and shows its output in colour', async () => {
    const { page } = browser
    await page.locator('.xterm').click()
    await page.keyboard.type(COLOUR_COMMAND)
    await page.keyboard.press('Enter')
    await waitForScreen(COLOUR_OUTPUT)
    expect(await cellOf(COLOUR_OUTPUT)).toMatchObject({ text: 'R', fg: 1, fgPalette: true })
    expect(await cellOf(COLOUR_OUTPUT, 4)).toMatchObject({ text: ' ', bg: 4, bgPalette: true })
    expect(await cellOf(COLOUR_OUTPUT, 5)).toMatchObject({ text: 'B', bg: 4, bgPalette: true })
    await browser.screenshot('page-1-colours')
  })

  it('names the terminal tab after the program in its foreground, with where it started on hover', async () => {
    const { page } = browser
    const tab = page.locator(`.terminal-tab[data-terminal-id="${terminalId}"] a.open`)
    const name = tab.locator('.tab-name')
    await waitForPrompt()
    expect(await name.textContent()).toBe('bash')
    expect(await tab.getAttribute('title')).toContain(`started in ${stack.workspaceDir}`)
    await type('sleep 300')
    await page.locator(`.terminal-tab[data-terminal-id="${terminalId}"] .tab-name`, { hasText: /^sleep$/ }).waitFor({ timeout: 15_000 })
    // The session says what runs in it, in the list and in its heading.
    await page.locator(`.session[data-session-id="${sessionId}"] .running`, { hasText: 'sleep' }).waitFor({ timeout: 20_000 })
    await browser.screenshot('page-1b-foreground-sleep')
    await interrupt()
    // Back at the prompt the shell is in the foreground again.
    await page.locator(`.terminal-tab[data-terminal-id="${terminalId}"] .tab-name`, { hasText: /^bash$/ }).waitFor({ timeout: 15_000 })
  })

  it('draws an emoji two cells wide, as the sidecar and tmux measure it (Unicode 11)', async () => {
    await type(String.raw`printf 'wide:\360\237\230\200x|\n'`)
    // The output line, not the echoed command (which holds the octal escapes, not the emoji).
    await waitForScreen('wide:\u{1F600}x|')
    const widths = await browser.page.evaluate(() => {
      const buffer = (globalThis as any).__termkeep.view().term.buffer.active
      for (let y = buffer.length - 1; y >= 0; y--) {
        const line = buffer.getLine(y)
        const text = line?.translateToString(false) ?? ''
        if (!text.startsWith('wide:')) continue
        return [5, 6, 7, 8].map((x) => [line.getCell(x).getChars(), line.getCell(x).getWidth()])
      }
      return undefined
    })
    expect(widths).toEqual([
      ['\u{1F600}', 2],
      ['', 0],
      ['x', 1],
      ['|', 1],
    ])
  })

  it('pastes with bracketed paste when the shell asked for it', async () => {
    const { page } = browser
    const sent: Buffer[] = []
    const onRequest = (request: import('playwright-core').Request) => {
      if (request.url().includes('/input')) sent.push(request.postDataBuffer() ?? Buffer.alloc(0))
    }
    page.on('request', onRequest)
    // bash turns bracketed paste on just before it prints its prompt.
    await waitForPrompt()
    await page.evaluate((text) => {
      const data = new DataTransfer()
      data.setData('text/plain', text)
      const target = document.querySelector('.xterm-helper-textarea')!
      target.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }))
    }, 'echo pasted-$((3+4))')
    await page.keyboard.press('Enter')
    await waitForScreen('\npasted-7')
    page.off('request', onRequest)
    // bash turns bracketed paste on (CSI ? 2004 h); xterm.js then wraps the paste in 200~/201~.
    expect(Buffer.concat(sent).toString()).toContain('\x1b[200~echo pasted-$((3+4))\x1b[201~')
  })

  it('resizes the remote terminal with the window', async () => {
    const before = await info()
    await browser.page.setViewportSize({ width: 900, height: 560 })
    const after = await waitFor(
      async () => {
        const now = await info()
        return now.cols < before.cols && now.rows < before.rows ? now : undefined
      },
      20_000,
      'the terminal to shrink with the window',
    )
    const local = await browser.page.evaluate(() => {
      const term = (globalThis as any).__termkeep.view().term
      return { cols: term.cols as number, rows: term.rows as number }
    })
    expect(local).toEqual({ cols: after.cols, rows: after.rows })
    // The shell itself sees the new size.
    await browser.page.keyboard.type('stty size')
    await browser.page.keyboard.press('Enter')
    await waitForScreen(`\n${after.rows} ${after.cols}`)
    await browser.screenshot('page-2-resized')
  })

  it('shows the same screen after a reload', async () => {
    const { page } = browser
    await waitForPrompt()
    const before = (await screenText()).trimEnd()
    await page.reload()
    await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
    await waitFor(async () => (await screenText()).trimEnd() === before, 20_000, 'the same screen after reload')
    expect(await cellOf(COLOUR_OUTPUT)).toMatchObject({ text: 'R', fg: 1, fgPalette: true })
    expect(await cellOf(COLOUR_OUTPUT, 4)).toMatchObject({ bg: 4, bgPalette: true })
    await browser.screenshot('page-3-reloaded')
  })

  it('answers a live terminal query (the control for the next test)', async () => {
    // `cat -v` under canonical echo shows any reply xterm.js sends as input, e.g. ^[[?1;2c.
    await type(String.raw`printf 'LIVE-%s\033[c\n' $((2*4)); cat -v`)
    await waitForScreen('LIVE-8')
    await waitForScreen('^[[?')
    await interrupt()
  })

  it('resumes after a network loss without losing, repeating or answering replayed output', async () => {
    // Output that happens while the page is cut off: three lines, then two queries (DA, CPR). The
    // shell waits for a gate file that appears only after the cut, so no stall of this process can
    // let the output (and the page's replies to the queries) through live.
    const gate = join(stack.workspaceDir, 'loss-gate')
    await type(
      String.raw`until [ -e ${gate} ]; do sleep 0.1; done; for i in 1 2 3; do echo "L$i-$((i*11))"; done; printf 'AFTER-LOSS-%s\033[c\033[6n\n' $((3*3)); cat -v`,
    )
    // Cut only once the whole command line (with its Enter) reached the shell: its own echo (the
    // previous test's command line also ended in `cat -v`).
    await waitFor(
      async () => commandEntered(await journalText(stack, sessionId, terminalId), 'until [', 'cat -v'),
      10_000,
      'the command to be entered',
    )
    proxy.cut()
    try {
      await browser.page.locator('.terminal-view[data-mode="reconnecting"]').waitFor({ timeout: 10_000 })
      writeFileSync(gate, '')
      // Wait (through the API directly, not the proxy) until the output exists, then reconnect.
      await waitFor(
        async () => (await journalText(stack, sessionId, terminalId)).includes('AFTER-LOSS-9'),
        20_000,
        'the output printed during the outage',
      )
    } finally {
      proxy.restore()
    }
    await waitForScreen('AFTER-LOSS-9', 30_000)
    await browser.page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 10_000 })
    // Input after the replay is delivered in order behind anything the page sent before it, so
    // once this marker is echoed a reply to the replayed queries would already be visible.
    await interrupt()
    await type('echo done-$((5+5))')
    await waitForScreen('\ndone-10')
    const text = await bufferText()
    for (const line of ['L1-11', 'L2-22', 'L3-33', 'AFTER-LOSS-9']) expect(count(text, line), line).toBe(1)
    const afterLoss = text.slice(text.indexOf('AFTER-LOSS-9'))
    expect(afterLoss).not.toContain('^[[')
    // The registry watch resumed too: a workspace added now appears in the list.
    const extra = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-extra-')))
    try {
      await client.createWorkspace(extra)
      await browser.page.locator('.workspace', { hasText: extra }).waitFor({ timeout: 20_000 })
    } finally {
      rmSync(extra, { recursive: true, force: true })
    }
    await browser.screenshot('page-4-after-network-loss')
  })

  it('types keystrokes once when the sidecar stalls under them: retried under their key after the 503', async () => {
    stall.stallNext((request) => request.method === 'POST' && request.url!.endsWith('/input'))
    // Typed key by key: the first batch meets the stopped sidecar, the rest waits behind it.
    await type('echo stalled-$((6*7))')
    const stalled = await stall.stalled()
    expect(stalled.status).toBe(503)
    await waitForScreen('\nstalled-42', 30_000)
    // The stalled sidecar typed that batch as it resumed; the page, told 503, sent it again under
    // the same key, answered 204 without typing it twice.
    expect(stalled.key).toMatch(/^in-/)
    const attempts = stall.passed.filter((p) => p.path.endsWith('/input') && p.key === stalled.key)
    expect(attempts.length).toBeGreaterThan(1)
    expect(attempts.at(-1)?.status).toBe(204)
    await type('echo next-$((2+2))')
    await waitForScreen('\nnext-4')
    // Had the first batch been typed twice (or lost), the echo would not have run as written.
    expect(count(await journalText(stack, sessionId, terminalId), 'stalled-42')).toBe(1)
    expect(await browser.page.locator('.terminal-view').getAttribute('data-mode')).toBe('live')
  })

  it('turns read-only when another client takes control, and takes it back on request', async () => {
    const { page } = browser
    const other = new AbortController()
    const events = await client.stream(`/v1/sessions/${sessionId}/terminals/${terminalId}/follow?attachment=other-client`, {
      signal: other.signal,
    })
    void (async () => {
      for await (const _ of events);
    })().catch(() => {})
    try {
      await page.locator('.terminal-view[data-mode="read-only"]').waitFor({ timeout: 20_000 })
      await page.getByRole('button', { name: 'Take control' }).click()
      await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 20_000 })
      await page.locator('.xterm').click()
      await type('echo control-$((1+2))')
      await waitForScreen('\ncontrol-3')
    } finally {
      other.abort()
    }
  })

  it('creates, renames and closes a second terminal, then returns to the first', async () => {
    const { page } = browser
    await page.getByRole('button', { name: 'New terminal' }).click()
    await waitFor(async () => !page.url().endsWith(`/t/${terminalId}`), 10_000, 'the new terminal to open')
    const second = /\/t\/([\w-]+)$/.exec(page.url())![1]
    await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
    const tab = page.locator(`.terminal-tab[data-terminal-id="${second}"]`)
    page.once('dialog', (dialog) => void dialog.accept('  build shell  '))
    await tab.getByRole('button', { name: /^Rename/ }).click()
    await tab.locator('a.open', { hasText: 'build shell' }).waitFor()
    expect((await client.terminal(sessionId, second)).title).toBe('build shell')
    page.once('dialog', (dialog) => void dialog.accept())
    await tab.getByRole('button', { name: /^Close/ }).click()
    await waitFor(async () => ['closed', 'retired'].includes((await client.terminal(sessionId, second)).state), 20_000, 'the close')
    await page
      .locator(
        `.terminal-tab[data-terminal-id="${second}"][data-state="closed"], .terminal-tab[data-terminal-id="${second}"][data-state="retired"]`,
      )
      .waitFor()
    // Keyboard only: Ctrl+Shift+Home leaves the terminal for its tab; Shift+Tab reaches the first
    // terminal's tab; Enter opens it.
    await page.locator('.xterm').click()
    await page.keyboard.press('Control+Shift+Home')
    expect(await page.evaluate(() => document.activeElement?.closest('.terminal-tab')?.getAttribute('data-terminal-id'))).toBe(second)
    for (let i = 0; i < 8; i++) {
      const focused = await page.evaluate(() =>
        document.activeElement?.matches('a.open')
          ? document.activeElement.closest('.terminal-tab')?.getAttribute('data-terminal-id')
          : null,
      )
      if (focused === terminalId) break
      await page.keyboard.press('Shift+Tab')
    }
    await page.keyboard.press('Enter')
    await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
    await waitForScreen('done-10')
    expect(page.url()).toMatch(new RegExp(`/t/${terminalId}$`))
  })

  it("folds ended terminals away behind a toggle, and names the open one's CLI command", async () => {
    const { page } = browser
    await page.locator('.attach-hint code', { hasText: `termkeep attach ${sessionId} ${terminalId}` }).waitFor()
    const ended = (await client.terminals(sessionId)).filter((t) => t.state !== 'running' && t.state !== 'starting')
    expect(ended.length).toBeGreaterThan(0)
    expect(await page.locator(`.terminal-tab[data-terminal-id="${ended[0]!.id}"]`).count()).toBe(0)
    const toggle = page.locator('.ended-toggle button')
    expect(await toggle.getAttribute('aria-expanded')).toBe('false')
    await toggle.click()
    await page.locator(`.terminal-tab[data-terminal-id="${ended[0]!.id}"]`).waitFor()
    expect(await page.locator('.ended-toggle button').getAttribute('aria-expanded')).toBe('true')
    await page.locator('.ended-toggle button').click()
    await page.locator(`.terminal-tab[data-terminal-id="${ended[0]!.id}"]`).waitFor({ state: 'detached' })
  })

  it('archives and unarchives a session, renames a workspace and removes one from the list', async () => {
    const { page } = browser
    const alert = page.locator('.sidebar [role="alert"]')
    const workspace = page.locator('.workspace', { hasText: stack.workspaceDir })
    const row = (id: string) => workspace.locator('li', { has: page.locator(`[data-session-id="${id}"]`) })
    const archived = async () => (await client.registry()).archivedSessionIds

    await row(sessionId)
      .getByRole('button', { name: /^Archive/ })
      .click()
    await row(sessionId).waitFor({ state: 'detached' })
    expect(await archived()).toContain(sessionId)
    const toggle = workspace.locator('.archived-toggle button')
    expect(await toggle.textContent()).toBe('1 archived…')
    await toggle.click()
    await row(sessionId)
      .getByRole('button', { name: /^Unarchive/ })
      .click()
    await toggle.waitFor({ state: 'detached' })
    expect(await archived()).not.toContain(sessionId)
    await row(sessionId)
      .getByRole('button', { name: /^Archive/ })
      .waitFor()

    const otherDir = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-page-other-')))
    try {
      const { workspace: other } = await client.createWorkspace(otherDir)
      const second = page.locator(`.workspace[data-workspace-id="${other.id}"]`)
      await second.waitFor()
      const titleOf = async (id: string) => (await client.registry()).workspaces.find((w) => w.id === id)?.title
      page.once('dialog', (dialog) => void dialog.accept('  scratch space  '))
      await second.getByRole('button', { name: /^Rename/ }).click()
      await second.locator('.title', { hasText: 'scratch space' }).waitFor()
      expect(await titleOf(other.id)).toBe('scratch space')
      // A name another workspace has is refused in words, and nothing changes.
      const taken = (await client.registry()).workspaces.find((w) => w.id !== other.id)!.title
      page.once('dialog', (dialog) => void dialog.accept(taken))
      await second.getByRole('button', { name: /^Rename/ }).click()
      await waitFor(async () => /^Could not rename the workspace: .+/.test((await alert.textContent()) ?? ''), 10_000, 'the refusal')
      expect(await titleOf(other.id)).toBe('scratch space')
      // Remove asks first: declined, it stays; accepted, it leaves the list and the directory stays.
      page.once('dialog', (dialog) => void dialog.dismiss())
      await second.getByRole('button', { name: /^Remove/ }).click()
      await waitFor(async () => await second.getByRole('button', { name: /^Remove/ }).isEnabled(), 10_000, 'the declined removal')
      expect(await titleOf(other.id)).toBe('scratch space')
      page.once('dialog', (dialog) => void dialog.accept())
      await second.getByRole('button', { name: /^Remove/ }).click()
      await second.waitFor({ state: 'detached' })
      expect(await titleOf(other.id)).toBeUndefined()
      expect(realpathSync(otherDir)).toBe(otherDir)
      expect(await alert.textContent()).toBe('')
    } finally {
      rmSync(otherDir, { recursive: true, force: true })
    }
  })

  it('shows the persisted display, read-only, once the sidecar is stopped', async () => {
    // The settled revision includes the coloured line before the sidecar goes away.
    await waitFor(
      async () => {
        const display = await readDisplay(client, sessionId, terminalId).catch(() => undefined)
        const lines = display ? displayToLines(display, { color: false }) : ''
        // The latest output (the last command and the prompt after it) is in the revision.
        return lines.includes(COLOUR_OUTPUT) && lines.includes('\ncontrol-3') && /[#$]$/.test(lines.trimEnd()) ? display : undefined
      },
      20_000,
      'a settled display with the latest output',
    )
    const cursor = () =>
      browser.page.evaluate(() => {
        const term = (globalThis as any).__termkeep.view().term
        return {
          x: term.buffer.active.cursorX as number,
          y: term.buffer.active.cursorY as number,
          cols: term.cols as number,
          rows: term.rows as number,
        }
      })
    await waitForPrompt()
    const liveCursor = await cursor()
    await stack.sidecar.stop()
    const { page } = browser
    await page.locator('.terminal-view[data-mode="display"]').waitFor({ timeout: 30_000 })
    await page.getByText('last saved screen').waitFor()
    const text = await bufferText()
    for (const line of [COLOUR_OUTPUT, 'AFTER-LOSS-9', 'done-10']) expect(count(text, line), line).toBe(1)
    expect(await cellOf(COLOUR_OUTPUT)).toMatchObject({ text: 'R', fg: 1, fgPalette: true })
    expect(await cellOf(COLOUR_OUTPUT, 4)).toMatchObject({ text: ' ', bg: 4, bgPalette: true })
    expect(await cursor()).toEqual(liveCursor)
    // Read-only: typing into the persisted display sends no input request.
    const inputs: string[] = []
    browser.page.on('request', (request) => void (request.url().includes('/input') && inputs.push(request.url())))
    await browser.page.locator('.xterm').click()
    await browser.page.keyboard.type('echo should-not-arrive')
    await browser.page.keyboard.press('Enter')
    // Absence can only be checked after a grace period: a live view sends each key at once.
    await browser.page.evaluate(() => new Promise((r) => setTimeout(r, 300)))
    expect(inputs).toEqual([])
    await browser.screenshot('page-5-persisted-display')
  })

  it('shows the persisted display of a terminal retired by a sidecar restart (410)', async () => {
    const restarted = await startSidecar({
      dataDir: stack.sidecar.dataDir,
      databaseUrl: stack.sidecar.databaseUrl,
      secret: stack.sidecar.secret,
      port: Number(new URL(stack.sidecar.url).port),
    })
    stack.sidecar = restarted
    await expect(client.stream(`/v1/sessions/${sessionId}/terminals/${terminalId}/follow?attachment=probe`)).rejects.toMatchObject({
      status: 410,
    })
    await browser.page.reload()
    await browser.page.locator('.terminal-view[data-mode="display"]').waitFor({ timeout: 30_000 })
    await browser.page.getByText('ended when its terminal host stopped or restarted').waitFor()
    expect(count(await bufferText(), COLOUR_OUTPUT)).toBe(1)
    expect(await cellOf(COLOUR_OUTPUT)).toMatchObject({ text: 'R', fg: 1, fgPalette: true })
    await browser.screenshot('page-6-retired-display')
    expect(browser.errors).toEqual([])
  })
})
