/**
 * Debian's Chromium driven by playwright-core: a fresh empty user-data-dir per launch and exactly
 * the flags this closed network needs (without the background-networking ones Chromium stalls on
 * refused connections). Screenshots go to test-artifacts/ (gitignored).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
export const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname

export interface Browser {
  context: BrowserContext
  page: Page
  /** Uncaught page errors and Content-Security-Policy refusals. */
  errors: string[]
  screenshot(name: string): Promise<void>
  close(): Promise<void>
}

export async function launch(viewport = { width: 1200, height: 760 }): Promise<Browser> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'termkeep-chromium-'))
  mkdirSync(ARTIFACTS, { recursive: true })
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
    timeout: 60_000,
  })
  const page = context.pages()[0] ?? (await context.newPage())
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
  // Content-Security-Policy refusals only show up as console errors.
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) errors.push(`csp: ${message.text()}`)
  })
  return {
    context,
    page,
    errors,
    screenshot: async (name) => void (await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) })),
    close: async () => {
      await context.close()
      rmSync(userDataDir, { recursive: true, force: true })
    },
  }
}
