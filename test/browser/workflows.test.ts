/**
 * The page's workflow runs in real Chromium against the real Node API and sidecar: a session's
 * runs are listed with each member's state, a member's link opens its terminal live (a person
 * types into it while the run goes on), and the list follows the run to its end.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { TermkeepClient } from '../../web/client/api.ts'
import { AGENTS_ENV } from '../workflows/support.ts'
import { launch, type Browser } from './chromium.ts'
import { startStack, type Stack } from './stack.ts'

describe('web page: workflow runs (Chromium, full stack)', () => {
  let stack: Stack
  let browser: Browser
  let client: TermkeepClient

  beforeAll(async () => {
    stack = await startStack('browser-workflows', { sidecarEnv: AGENTS_ENV })
    client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    await client.createWorkspace(stack.workspaceDir)
    await client.request('POST', '/v1/sessions', { json: { id: 's1', cwd: stack.workspaceDir } })
    browser = await launch()
  }, 60_000)
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail')
      await browser?.screenshot(`workflows-failed-${context.task.name.replace(/\W+/g, '-')}`).catch(() => {})
  })
  afterAll(async () => {
    await browser?.close()
    await stack?.stop()
  })

  it("lists a run's members, opens a member's terminal from its link, and follows the run to its end", async () => {
    const { page } = browser
    const run = await client.startWorkflow('s1', {
      script:
        "return await parallel(['quick [result]', '[echo-input]'], (p, i) => agent(p, { label: i === 0 ? 'quick one' : 'talk to me' }))",
    })
    await page.goto(`${stack.api.url}/#/s/s1`)
    await page.fill('#token', stack.token)
    await page.click('form.sign-in button[type=submit]')
    const row = page.locator(`.run[data-run-id="${run.id}"]`)
    await row.locator('.member[data-seq="1"][data-state="completed"]').waitFor({ timeout: 30_000 })
    await row.locator('.member[data-seq="2"][data-state="running"]').waitFor({ timeout: 30_000 })
    expect(await row.getAttribute('data-status')).toBe('running')
    await row.getByRole('link', { name: '#2 talk to me' }).click()
    await page.waitForFunction(() => ((globalThis as any).__termkeep?.screenText() ?? '').includes('ready for input'), undefined, {
      timeout: 20_000,
    })
    expect(page.url()).toMatch(new RegExp(`#/s/s1/t/${run.id}-2$`))
    await page.locator('.terminal-view[data-mode="live"]').waitFor()
    await page.locator('.xterm-host').click()
    await page.keyboard.type('hello from the page')
    await page.keyboard.press('Enter')
    await page.waitForFunction(
      () => ((globalThis as any).__termkeep.screenText() as string).includes('typed: hello from the page'),
      undefined,
      { timeout: 20_000 },
    )
    await browser.screenshot('workflows-member-terminal')
    await page.keyboard.type('done')
    await page.keyboard.press('Enter')
    await row.locator('.member[data-seq="2"][data-state="completed"]').waitFor({ timeout: 30_000 })
    await page.locator(`.run[data-run-id="${run.id}"][data-status="completed"]`).waitFor({ timeout: 30_000 })
    const detail = await client.workflow('s1', run.id)
    expect(detail.result?.value).toEqual(['result: quick', expect.stringContaining('typed: hello from the page')])
    expect(detail.log).toEqual({ valid: true })
    expect(browser.errors).toEqual([])
  })
})
