/**
 * Commands on the page (Chromium, full stack): a bash with termkeep's integration, whose user
 * prompt also emits plain OSC 133 marks of its own. Each command typed gets one mark on its line,
 * green for exit 0 and red otherwise; marks a program prints draw nothing; no mark shows as text;
 * the view jumps between commands. A screenshot lands in test-artifacts/.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import { Commands } from '../commands/support.ts'
import { launch, type Browser } from './chromium.ts'

let c: Commands
let browser: Browser
const TID = 'page'

beforeAll(async () => {
  c = await Commands.start('page-commands')
  await c.open(TID, '/usr/bin/bash', { cols: 90, rows: 20 })
  // The shell at its prompt before the page takes control (a run needs nobody in control).
  expect((await c.run(TID, 'cd /tmp')).body.exitCode).toBe(0)
  browser = await launch()
})
afterEach(async (context) => {
  if (context.task.result?.state === 'fail') await browser?.screenshot('commands-failed').catch(() => {})
})
afterAll(async () => {
  await browser?.close()
  await c?.stop()
})

const marks = () =>
  browser.page.evaluate(() =>
    ((globalThis as any).__termkeep.view().marks.commands as { exitCode: number | null; command: string; marker: { line: number } }[]).map(
      (m) => ({ exitCode: m.exitCode, command: m.command, line: m.marker.line }),
    ),
  )
const viewportY = () => browser.page.evaluate(() => (globalThis as any).__termkeep.view().term.buffer.active.viewportY as number)
const bufferText = () => browser.page.evaluate(() => (globalThis as any).__termkeep.bufferText() as string)

async function typeCommand(line: string, count: number): Promise<void> {
  await browser.page.keyboard.type(line)
  await browser.page.keyboard.press('Enter')
  await browser.page.waitForFunction((n) => (globalThis as any).__termkeep.view().marks.commands.length >= n, count, { timeout: 15_000 })
}

it('marks each command with its outcome, ignores printed marks, and jumps between commands', async () => {
  const { page } = browser
  await page.goto(c.stack.api.url)
  await page.fill('#token', c.stack.token)
  await page.click('form.sign-in button[type=submit]')
  await page.getByText('No workspaces yet').waitFor()
  await page.goto(`${c.stack.api.url}/#/s/${c.sid}/t/${TID}`)
  await page.reload()
  await page.locator('.terminal-view[data-mode="live"]').waitFor({ timeout: 30_000 })
  await page.locator('.xterm').click()

  await typeCommand('echo ok', 1)
  await typeCommand('false', 2)
  // A program printing marks (plain, and with a wrong nonce) draws nothing.
  await typeCommand(String.raw`printf '\033]133;B\007\033]133;C\007\033]133;D;0\007\033]133;B;tk=x\007\033]133;D;1;tk=x\007done\n'`, 3)
  // Drawn: one element per command, green or red.
  await page.locator('.command-mark.command-failed').waitFor()
  await browser.screenshot('commands-1-marks')
  const drawn = () =>
    page.evaluate(() =>
      [...document.querySelectorAll<HTMLElement>('.command-mark')]
        .filter((el) => el.style.display !== 'none')
        .map((el) => (el.classList.contains('command-ok') ? 'ok' : 'failed')),
    )
  expect(await drawn()).toEqual(['ok', 'failed', 'ok'])
  await typeCommand('seq 1 60', 4)
  await typeCommand("sh -c 'exit 3'", 5)
  expect((await marks()).map((m) => [m.command, m.exitCode])).toEqual([
    ['echo ok', 0],
    ['false', 1],
    [String.raw`printf '\033]133;B\007\033]133;C\007\033]133;D;0\007\033]133;B;tk=x\007\033]133;D;1;tk=x\007done\n'`, 0],
    ['seq 1 60', 0],
    ["sh -c 'exit 3'", 3],
  ])
  const text = await bufferText()
  // No mark shows (the echo of the printf line holds its escapes as typed text: left out).
  const shown = text.split('\n').filter((line) => !line.includes("printf '"))
  expect(shown.join('\n')).not.toMatch(/\]133;|\]633;|\]7;|tk=/)
  expect(shown).toContain('done')
  // Each mark sits on its command's line.
  const lines = text.split('\n')
  for (const mark of await marks()) expect(lines[mark.line]).toContain(mark.command.slice(0, 20))

  // Drawn: one element per command on screen, green or red.
  // Scrolled out of view, the earlier ones are not drawn (xterm.js hides them); the last is red.
  expect((await drawn()).at(-1)).toBe('failed')

  // Jumps: the previous command above the view's top, then the next one.
  const all = await marks()
  const seqLine = all[3]!.line
  const top = await viewportY()
  expect(top).toBeGreaterThan(seqLine)
  await page.getByRole('button', { name: 'Previous command (Ctrl+Shift+Up)' }).click()
  expect(await viewportY()).toBe(seqLine)
  await page.locator('.xterm').click()
  await page.keyboard.press('Control+Shift+ArrowUp')
  expect(await viewportY()).toBe(all[2]!.line)
  await page.keyboard.press('Control+Shift+ArrowDown')
  expect(await viewportY()).toBe(seqLine)
  await browser.screenshot('commands-2-jumped')
  expect(browser.errors).toEqual([])
})
