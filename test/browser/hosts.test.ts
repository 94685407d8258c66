/**
 * The page with two hosts (two sidecars, one sqld, the Node API) in real Chromium: workspaces
 * grouped under their host (the same directory on both is two workspaces), a workspace added on
 * the host chosen beside its path, a session started in a workspace on the workspace's host, and a
 * host that stops shown down with its name and since when, its sessions unreachable (not retired)
 * until it is back. Screenshots in test-artifacts/.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { TermkeepClient } from '../../web/client/api.ts'
import { startTwoHosts, type TwoHosts } from '../support/two-hosts.ts'
import { launch, type Browser } from './chromium.ts'

let fleet: TwoHosts
let client: TermkeepClient
let browser: Browser
let app: string
const session = { alpha: '', beta: '' }

const group = (name: 'alpha' | 'beta') => browser.page.locator(`.host-group[data-host-id="${fleet.hosts[name].id}"]`)
const sessionLink = (sid: string) => browser.page.locator(`a.session[data-session-id="${sid}"]`)

beforeAll(async () => {
  fleet = await startTwoHosts()
  client = new TermkeepClient({ url: fleet.api.url, token: fleet.token })
  app = join(realpathSync(fleet.hosts.alpha.dataDir), 'src', 'app')
  mkdirSync(join(app, '..', 'web'), { recursive: true })
  mkdirSync(app, { recursive: true })
  for (const name of ['alpha', 'beta'] as const) {
    const { workspace } = await client.createWorkspace(app, `app on ${name}`, name)
    session[name] = (await client.createSessionIn(workspace.id)).id
    // `command`: the route takes one (a test's program instead of a shell); the client's type does not.
    await client.json('PUT', `/v1/sessions/${session[name]}/terminals/t1`, { json: { cols: 80, rows: 24, command: 'exec sleep 300' } })
  }
  browser = await launch()
}, 120_000)

afterEach(async (context) => {
  if (context.task.result?.state === 'fail')
    await browser?.screenshot(`hosts-failed-${context.task.name.replace(/\W+/g, '-')}`).catch(() => {})
})

afterAll(async () => {
  await browser?.close()
  await fleet?.stop()
})

describe('the page with two hosts', () => {
  it('groups the workspaces by host: the same directory on each host under its own', async () => {
    const { page } = browser
    await page.goto(fleet.api.url)
    await page.fill('#token', fleet.token)
    await page.click('form.sign-in button[type=submit]')
    for (const name of ['alpha', 'beta'] as const) {
      await group(name).locator('.host-head', { hasText: name }).waitFor()
      expect(await group(name).getAttribute('data-host-state')).toBe('up')
      await group(name)
        .locator('.workspace', { hasText: `app on ${name}` })
        .waitFor()
      await group(name).locator(`a.session[data-session-id="${session[name]}"][data-marker="live"]`).waitFor()
      expect(await group(name).locator('.workspace').count()).toBe(1)
    }
    await browser.screenshot('hosts-1-grouped')
  })

  it("adds a workspace on the host chosen beside its path, and starts a session on the workspace's host", async () => {
    const { page } = browser
    await page.selectOption('#workspace-host', { label: 'beta' })
    await page.fill('#workspace-path', join(app, '..', 'web'))
    await page.keyboard.press('Enter')
    const added = group('beta').locator('.workspace', { hasText: 'web' })
    await added.waitFor()
    await added.getByRole('button', { name: '+ Session' }).click()
    await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
    const [, sid] = /#\/s\/([\w-]+)\/t\/[\w-]+$/.exec(page.url())!
    expect((await client.session(sid)).host).toBe(fleet.hosts.beta.id)
  }, 60_000)

  it('marks a host that is down with its name and since when; its sessions unreachable, not retired, until it is back', async () => {
    const { page } = browser
    const stoppedAt = Date.now()
    await fleet.hosts.beta.sidecar.stop({ terminals: 'keep' })
    const down = group('beta')
    await page.locator(`.host-group[data-host-id="${fleet.hosts.beta.id}"][data-host-state="down"]`).waitFor({ timeout: 10_000 })
    expect(await down.locator('.host-head').textContent()).toMatch(/^beta\s*down since /)
    const since = Date.parse((await down.locator('.host-head time').getAttribute('datetime'))!)
    expect(since).toBeGreaterThanOrEqual(stoppedAt - 1_000)
    await sessionLink(session.beta).and(page.locator('[data-marker="unreachable"]')).waitFor()
    expect(await sessionLink(session.beta).textContent()).toContain('unreachable')
    expect(await sessionLink(session.alpha).getAttribute('data-marker')).toBe('live')
    expect(await group('alpha').getAttribute('data-host-state')).toBe('up')
    await browser.screenshot('hosts-2-beta-down')

    await fleet.restart('beta')
    await page.locator(`.host-group[data-host-id="${fleet.hosts.beta.id}"][data-host-state="up"]`).waitFor({ timeout: 10_000 })
    await sessionLink(session.beta).and(page.locator('[data-marker="live"]')).waitFor({ timeout: 15_000 })
    expect(browser.errors).toEqual([])
  }, 60_000)
})
