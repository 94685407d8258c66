/**
 * The page as a tmux or VS Code terminal user expects it, in real Chromium against the real Node
 * API and sidecar: sessions labelled by what runs in them with a live/ended/retired marker, tabs
 * named after the foreground program; an address for every session and terminal (Back, Forward,
 * pasted links, reload); a narrow window that watches instead of squeezing the shared terminal;
 * "closed" said as such; find, links, copy and paste; hints that are commands which work where
 * they are printed; and, after a restart, the last screens at once. Screenshots in test-artifacts/.
 */
import { execFile } from 'node:child_process'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { ROOT } from '../../cli/self.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { PtyProcess } from '../../keeper/pty/pty-process.ts'
import { terminalPath, TermkeepClient } from '../../web/client/api.ts'
import { waitFor } from '../support/ports.ts'
import { startSidecar } from '../support/sidecar.ts'
import { launch, type Browser } from './chromium.ts'
import { startStack, type Stack } from './stack.ts'

describe('web page: what a tmux or VS Code terminal user expects (Chromium, full stack)', () => {
  let stack: Stack
  let browser: Browser
  let client: TermkeepClient
  /** S1: a `sleep` and an interactive shell; S2: a terminal whose program exited; S3: named, empty. */
  let s1 = ''
  let s2 = ''
  let s3 = ''
  const pages: Page[] = []

  const put = (sid: string, tid: string, body: Record<string, unknown>) =>
    client.json<TerminalInfo>('PUT', terminalPath(sid, tid), { json: { cols: 100, rows: 30, ...body } })
  const openedTerminal = (page: Page) => page.evaluate(() => (globalThis as any).__termkeep.view()?.terminalId as string | undefined)
  const screenText = (page: Page) => page.evaluate(() => (globalThis as any).__termkeep.screenText() as string)
  const waitForScreen = (page: Page, needle: string, timeout = 20_000) =>
    page.waitForFunction((n) => ((globalThis as any).__termkeep?.screenText() ?? '').includes(n), needle, { timeout })
  const signIn = async (page: Page, hash = '') => {
    await page.goto(`${stack.api.url}/${hash}`)
    await page.fill('#token', stack.token)
    await page.click('form.sign-in button[type=submit]')
    await page.locator('.sidebar .workspace').first().waitFor()
  }
  const newPage = async (viewport: { width: number; height: number }) => {
    const page = await browser.context.newPage()
    pages.push(page)
    await page.setViewportSize(viewport)
    return page
  }
  const info = (sid: string, tid: string) => client.terminal(sid, tid)

  beforeAll(async () => {
    stack = await startStack('browser-clients')
    client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    await client.createWorkspace(stack.workspaceDir)
    s1 = (await client.createSession(stack.workspaceDir)).id
    await put(s1, 't-sleep', { command: 'sleep 600' })
    await put(s1, 't-shell', {})
    s2 = (await client.createSession(stack.workspaceDir)).id
    await put(s2, 't-done', { command: 'echo finished; exit 3' })
    s3 = (await client.createSession(stack.workspaceDir, 'deploy')).id
    await waitFor(async () => (await info(s1, 't-sleep')).foregroundCommand === 'sleep', 20_000, 'sleep in the foreground')
    await waitFor(async () => (await info(s2, 't-done')).state === 'exited', 20_000, 'the short command to exit')
    browser = await launch()
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.api.url })
  })
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail')
      await browser?.screenshot(`clients-failed-${context.task.name.replace(/\W+/g, '-')}`).catch(() => {})
  })
  afterAll(async () => {
    for (const page of pages) await page.close().catch(() => {})
    await browser?.close()
    await stack?.stop()
  })

  it('labels sessions by name or directory and what runs in them, with a live / ended / no-terminals marker', async () => {
    const { page } = browser
    await signIn(page)
    const row = (sid: string) => page.locator(`.session[data-session-id="${sid}"]`)
    await row(s1).locator('.running', { hasText: 'sleep' }).waitFor({ timeout: 20_000 })
    expect(await row(s1).locator('.session-name').textContent()).toBe('project')
    expect(await row(s1).locator('.running').textContent()).toBe('sleep, bash')
    expect(await row(s1).getAttribute('data-marker')).toBe('live')
    expect(await row(s1).locator('.marker').textContent()).toBe('live')
    expect(await row(s1).getAttribute('title')).toContain(stack.workspaceDir)
    await row(s2).locator('.marker', { hasText: 'ended' }).waitFor({ timeout: 20_000 })
    expect(await row(s2).locator('.running').count()).toBe(0)
    expect(await row(s3).locator('.session-name').textContent()).toBe('deploy')
    expect(await row(s3).locator('.marker').textContent()).toBe('no terminals')
    expect(await page.locator('.sidebar').textContent()).not.toMatch(/Session \w{3} \d/)
    await browser.screenshot('clients-1-session-labels')
  })

  it('gives every session and terminal an address: links, Back, Forward, a pasted address and reload switch the view', async () => {
    const { page } = browser
    const url = () => new URL(page.url()).hash
    await page.locator(`.session[data-session-id="${s1}"]`).click()
    // A session opened without a terminal opens its first live one, and the address names it.
    await waitFor(async () => url() === `#/s/${s1}/t/t-sleep`, 20_000, 'the first live terminal')
    await page.locator(`.terminal-tab[data-terminal-id="t-shell"] a.open`).click()
    await waitFor(async () => url() === `#/s/${s1}/t/t-shell` && (await openedTerminal(page)) === 't-shell', 20_000, 't-shell')
    await page.locator(`.session[data-session-id="${s2}"]`).click()
    await waitFor(async () => url() === `#/s/${s2}/t/t-done` && (await openedTerminal(page)) === 't-done', 20_000, 's2')
    await waitForScreen(page, 'finished')
    await page.goBack()
    await waitFor(async () => url() === `#/s/${s1}/t/t-shell` && (await openedTerminal(page)) === 't-shell', 20_000, 'Back to t-shell')
    await page.goBack()
    await waitFor(async () => (await openedTerminal(page)) === 't-sleep', 20_000, 'Back to t-sleep')
    await page.goForward()
    await waitFor(async () => (await openedTerminal(page)) === 't-shell', 20_000, 'Forward to t-shell')
    expect(await page.locator(`.session[data-session-id="${s1}"]`).getAttribute('aria-current')).toBe('page')
    // An address pasted into this tab.
    await page.goto(`${stack.api.url}/#/s/${s2}/t/t-done`)
    await waitFor(async () => (await openedTerminal(page)) === 't-done', 20_000, 'the pasted address')
    await page.goto(`${stack.api.url}/#/s/${s1}/t/t-shell`)
    await waitFor(async () => (await openedTerminal(page)) === 't-shell', 20_000, 'the second pasted address')
    await page.reload()
    await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
    expect(await openedTerminal(page)).toBe('t-shell')
    // The address is a link others can open: a fresh tab signs in and lands on the terminal.
    const other = await newPage({ width: 1000, height: 700 })
    await signIn(other, `#/s/${s1}/t/t-sleep`)
    await waitFor(async () => (await openedTerminal(other)) === 't-sleep', 20_000, 'the link in another tab')
    await other.close()
  })

  it('a narrow window watches without squeezing the shared terminal; the window in control that is used decides', async () => {
    const { page } = browser
    await page.locator('.xterm').click()
    await page.keyboard.type('echo wide-$((4*4))')
    await page.keyboard.press('Enter')
    await waitForScreen(page, '\nwide-16')
    // Typed into, this window decides the size: it fits the program to itself.
    const wide = await waitFor(
      async () => {
        const now = await info(s1, 't-shell')
        return now.cols > 100 ? now : undefined
      },
      20_000,
      'the program to fit the wide window',
    )
    const phone = await newPage({ width: 390, height: 844 })
    await signIn(phone, `#/s/${s1}/t/t-shell`)
    await phone.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
    await phone.locator('.terminal-view[data-size="scaled"], .terminal-view[data-size="scroll"]').waitFor({ timeout: 10_000 })
    // Opening it took control (the newest attachment does) but resized nothing: it is shown smaller.
    await phone.evaluate(() => new Promise((r) => setTimeout(r, 1500)))
    expect(await info(s1, 't-shell')).toMatchObject({ cols: wide.cols, rows: wide.rows })
    const phoneTerm = await phone.evaluate(() => {
      const term = (globalThis as any).__termkeep.view().term
      return { cols: term.cols as number, rows: term.rows as number, fontSize: term.options.fontSize as number }
    })
    expect(phoneTerm).toMatchObject({ cols: wide.cols, rows: wide.rows })
    expect(phoneTerm.fontSize).toBeLessThan(14)
    await phone.screenshot({ path: `${ROOT}test-artifacts/clients-3-narrow-viewer.png` })
    expect(await phone.locator('.terminal-bar .size').textContent()).toContain(`${wide.cols}×${wide.rows}`)
    // An explicit choice: fit the program to the narrow window.
    await phone.getByRole('button', { name: 'Fit to this window' }).click()
    const narrow = await waitFor(
      async () => {
        const now = await info(s1, 't-shell')
        return now.cols < 60 ? now : undefined
      },
      20_000,
      'the program to fit the narrow window on request',
    )
    await phone.locator('.terminal-view[data-size="fit"]').waitFor()
    await phone.screenshot({ path: `${ROOT}test-artifacts/clients-3b-narrow-fitted.png` })
    // The wide window, read-only now, shows the narrow program as it is; taking control back (it
    // was used before) makes it decide again.
    await page.locator('.terminal-view[data-mode="read-only"]').waitFor({ timeout: 20_000 })
    await waitFor(
      async () => (await page.evaluate(() => (globalThis as any).__termkeep.view().term.cols)) === narrow.cols,
      20_000,
      'the wide window to show the narrow program as it is',
    )
    await page.getByRole('button', { name: 'Take control' }).click()
    await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 20_000 })
    await page.locator('.xterm').click()
    await page.keyboard.type('echo back-$((5*5))')
    await page.keyboard.press('Enter')
    await waitForScreen(page, '\nback-25')
    await waitFor(async () => (await info(s1, 't-shell')).cols === wide.cols, 20_000, 'the wide window to decide again')
    await phone.close()
  })

  it('finds in the scrollback, opens links, copies what is selected and pastes with bracketed paste', async () => {
    const { page } = browser
    const linkTarget = `${stack.api.url}/v1/health`
    await page.keyboard.type(`echo NEEDLE-$((6*7))-TOP; seq 1 150; echo ${linkTarget}`)
    await page.keyboard.press('Enter')
    await waitForScreen(page, `\n${linkTarget}`)
    // Find (Ctrl+Shift+F): the match far up in the scrollback is selected and scrolled to.
    await page.keyboard.press('Control+Shift+F')
    const find = page.locator('.find-bar input')
    await find.waitFor()
    await find.fill('NEEDLE-42-TOP')
    await page.locator('.find-count', { hasText: '1 of 1' }).waitFor({ timeout: 10_000 })
    const found = await page.evaluate(() => {
      const term = (globalThis as any).__termkeep.view().term
      return { selection: term.getSelection() as string, viewportY: term.buffer.active.viewportY, baseY: term.buffer.active.baseY }
    })
    expect(found.selection).toBe('NEEDLE-42-TOP')
    expect(found.viewportY).toBeLessThan(found.baseY)
    await browser.screenshot('clients-4-find')
    await find.press('Escape')
    await page.locator('.find-bar').waitFor({ state: 'hidden' })
    await page.evaluate(() => (globalThis as any).__termkeep.view().term.scrollToBottom())
    // A link in the output opens in a new tab when clicked.
    const at = await page.evaluate((target) => {
      const term = (globalThis as any).__termkeep.view().term
      const buffer = term.buffer.active
      const screen = document.querySelector('.xterm-screen')!.getBoundingClientRect()
      for (let y = 0; y < term.rows; y++) {
        const x =
          buffer
            .getLine(buffer.viewportY + y)
            ?.translateToString(true)
            .indexOf(target) ?? -1
        if (x === -1) continue
        const cell = { w: screen.width / term.cols, h: screen.height / term.rows }
        return { x: screen.left + (x + 3) * cell.w, y: screen.top + (y + 0.5) * cell.h }
      }
      return undefined
    }, linkTarget)
    expect(at).toBeDefined()
    await page.mouse.move(at!.x, at!.y)
    const opened = browser.context.waitForEvent('page', { timeout: 10_000 })
    await page.mouse.click(at!.x, at!.y)
    const tab = await opened
    await waitFor(async () => tab.url() === linkTarget, 10_000, 'the link to open')
    await tab.close()
    // Copy on select: a double-clicked word is on the clipboard.
    const word = await page.evaluate(() => {
      const term = (globalThis as any).__termkeep.view().term
      const buffer = term.buffer.active
      const screen = document.querySelector('.xterm-screen')!.getBoundingClientRect()
      for (let y = 0; y < term.rows; y++) {
        if (buffer.getLine(buffer.viewportY + y)?.translateToString(true) !== '149') continue
        return { x: screen.left + 1.5 * (screen.width / term.cols), y: screen.top + (y + 0.5) * (screen.height / term.rows) }
      }
      return undefined
    })
    expect(word).toBeDefined()
    await page.mouse.dblclick(word!.x, word!.y)
    await waitFor(
      async () => (await page.evaluate(() => navigator.clipboard.readText())) === '149',
      10_000,
      'the selection on the clipboard',
    )
    // Ctrl+Shift+C copies the selection again (the terminal does not get the key).
    await page.evaluate(() => navigator.clipboard.writeText('something else'))
    await page.keyboard.press('Control+Shift+C')
    await waitFor(async () => (await page.evaluate(() => navigator.clipboard.readText())) === '149', 10_000, 'Ctrl+Shift+C to copy')
    // Ctrl+Shift+V pastes the clipboard, wrapped for bracketed paste since bash asked for it.
    const sent: Buffer[] = []
    page.on('request', (request) => {
      if (request.url().includes('/input')) sent.push(request.postDataBuffer() ?? Buffer.alloc(0))
    })
    await page.evaluate(() => navigator.clipboard.writeText('echo pasted-$((6*7))'))
    await page.locator('.xterm').click()
    await page.keyboard.press('Control+Shift+V')
    // The clipboard is read asynchronously: Enter goes once the pasted text is on the line.
    await waitForScreen(page, 'echo pasted-$((6*7))')
    await page.keyboard.press('Enter')
    await waitForScreen(page, '\npasted-42')
    expect(Buffer.concat(sent).toString()).toContain('\x1b[200~echo pasted-$((6*7))\x1b[201~')
    expect(count(await screenText(page), 'pasted-42')).toBe(1)
  })

  it('prints commands without backticks, in forms that run where they are printed', async () => {
    const other = await newPage({ width: 1000, height: 700 })
    await other.goto(`${stack.api.url}/`)
    const hint = other.locator('.sign-in-hint')
    expect(await hint.textContent()).not.toContain('`')
    const commands = await hint.locator('code').allTextContents()
    expect(commands).toContain('./termkeep token create --help')
    await other.screenshot({ path: `${ROOT}test-artifacts/clients-7-sign-in-hint.png` })
    // The sign-in hint's command runs in termkeep's directory, as it says.
    const help = await shell('./termkeep token create --help', {})
    expect(help.code, help.output).toBe(0)
    expect(help.output).toMatch(/^usage: termkeep token create/)
    await other.close()
    // The attach hint under the open terminal attaches from a shell in termkeep's directory.
    const { page } = browser
    const attach = (await page.locator('.attach-hint .attach-command').textContent())!
    expect(attach).toBe(`TERMKEEP_URL=${stack.api.url} ./termkeep attach ${s1} t-shell`)
    expect(await page.locator('.attach-hint').textContent()).not.toContain('`')
    const attached = inPty(attach, { TERMKEEP_TOKEN: stack.token })
    try {
      await waitFor(async () => attached.output().includes('back-25'), 30_000, 'attach to draw the remote screen')
      attached.write('\x1c') // Ctrl-\ detaches
      expect(await attached.exited).toBe(0)
    } finally {
      attached.kill()
    }
  })

  it('says a terminal this window closed was closed (not "ended on signal 1"), and one closed elsewhere too', async () => {
    const { page } = browser
    await page.getByRole('button', { name: 'New terminal' }).click()
    await waitFor(async () => !['t-shell', 't-sleep'].includes((await openedTerminal(page)) ?? 't-shell'), 20_000, 'the new terminal')
    const mine = (await openedTerminal(page))!
    await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
    page.once('dialog', (dialog) => void dialog.accept())
    await page
      .locator(`.terminal-tab[data-terminal-id="${mine}"]`)
      .getByRole('button', { name: /^Close/ })
      .click()
    const banner = page.locator('.banner')
    await banner.filter({ hasText: 'This terminal was closed from this window.' }).waitFor({ timeout: 20_000 })
    expect(await banner.textContent()).not.toMatch(/signal/i)
    await page.locator(`.terminal-tab[data-terminal-id="${mine}"] .state`, { hasText: 'closed' }).waitFor()
    await browser.screenshot('clients-5-closed-here')
    // Closed by another client while this window shows it.
    await page.goto(`${stack.api.url}/#/s/${s1}/t/t-sleep`)
    await page.locator('.terminal-view[data-mode="live"], .terminal-view[data-mode="read-only"]').waitFor({ timeout: 30_000 })
    await client.closeTerminal(s1, 't-sleep')
    await banner.filter({ hasText: 'This terminal was closed.' }).waitFor({ timeout: 20_000 })
    expect(await banner.textContent()).not.toMatch(/signal/i)
  })

  it('after a restart, opens a session on the last screen of its retired terminals at once, read-only and marked', async () => {
    await stack.sidecar.stop()
    stack.sidecar = await startSidecar({
      dataDir: stack.sidecar.dataDir,
      databaseUrl: stack.sidecar.databaseUrl,
      secret: stack.sidecar.secret,
      port: Number(new URL(stack.sidecar.url).port),
    })
    const page = await newPage({ width: 1200, height: 760 })
    await signIn(page, `#/s/${s1}`)
    await page.locator('.terminal-view[data-mode="display"]').waitFor({ timeout: 30_000 })
    // The one that ended last, its tab and every other ended one in view (no "N ended…" fold).
    expect(new URL(page.url()).hash).toMatch(new RegExp(`^#/s/${s1}/t/`))
    expect(await openedTerminal(page)).toBe('t-shell')
    await page.waitForFunction(() => ((globalThis as any).__termkeep.bufferText() as string).includes('back-25'), undefined, {
      timeout: 20_000,
    })
    expect(await page.locator('.ended-toggle').count()).toBe(0)
    expect(await page.locator('.terminal-tab').count()).toBe((await client.terminals(s1)).length)
    expect(await page.locator('.terminal-bar .badge').textContent()).toBe('read-only · last screen')
    await page.getByText('ended when its terminal host stopped or restarted').waitFor()
    await page.locator(`.session[data-session-id="${s1}"] .marker`, { hasText: 'retired' }).waitFor({ timeout: 20_000 })
    await page.screenshot({ path: `${ROOT}test-artifacts/clients-6-after-restart.png` })
    expect(browser.errors).toEqual([])
  })
})

const count = (text: string, needle: string) => text.split(needle).length - 1

/** Runs a command line as a shell in termkeep's directory does. */
function shell(command: string, env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', command], { cwd: ROOT, env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr }),
    )
  })
}

/** A command line run by a shell in a real PTY, in termkeep's directory. */
function inPty(command: string, env: Record<string, string>) {
  const pty = new PtyProcess({
    file: '/bin/sh',
    args: ['-c', command],
    cwd: ROOT,
    env: { ...process.env, ...env, TERM: 'xterm-256color' } as Record<string, string>,
    cols: 100,
    rows: 30,
  })
  const decoder = new TextDecoder()
  let output = ''
  pty.onData((data) => (output += decoder.decode(data, { stream: true })))
  const exit = new Promise<number>((resolve) => pty.onExit(({ exitCode }) => resolve(exitCode ?? -1)))
  const ended = new Promise<void>((resolve) => pty.onEnd(resolve))
  return {
    output: () => output,
    write: (text: string) => pty.write(Buffer.from(text)),
    exited: Promise.all([exit, ended]).then(([code]) => code),
    kill: () => {
      try {
        process.kill(pty.pid, 'SIGKILL')
      } catch {} // already gone
    },
  }
}
