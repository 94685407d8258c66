/**
 * One terminal's tab: its name (the program in its foreground, or the name a person gave it) as
 * a link to its address, a hover with where it started, its shell, size and id, its state in
 * words (how it ended, once it did), and rename and close while it runs.
 */
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { endedText, endedWord, isLive, terminalName } from '../client/labels.ts'
import { h } from './dom.ts'
import { routeHash } from './route.ts'

export interface TabActions {
  rename(info: TerminalInfo): void
  close(info: TerminalInfo): void
}

export function terminalTab(info: TerminalInfo, { current, closedHere }: { current: boolean; closedHere: boolean }, actions: TabActions) {
  const live = isLive(info)
  const name = terminalName(info)
  return h(
    'li',
    { class: 'terminal-tab', 'data-terminal-id': info.id, 'data-state': info.state },
    h(
      'a',
      {
        class: 'open',
        href: routeHash({ sessionId: info.sessionId, terminalId: info.id }),
        title: `${name} — started in ${info.cwd} (${info.shell.path}); ${info.cols}×${info.rows}; ${info.id}`,
        'aria-current': current ? 'true' : undefined,
      },
      h('span', { class: 'tab-name' }, name),
      info.workflow && h('span', { class: 'state' }, ` agent #${info.workflow.seq}`),
      h(
        'span',
        { class: `state ${live ? 'live' : 'ended'}`, title: live ? undefined : `This terminal ${endedText(info, closedHere)}` },
        ` ${live ? info.state : endedWord(info)}`,
      ),
    ),
    live && h('button', { type: 'button', class: 'small', 'aria-label': `Rename ${name}`, onclick: () => actions.rename(info) }, 'Rename'),
    live &&
      h('button', { type: 'button', class: 'small danger', 'aria-label': `Close ${name}`, onclick: () => actions.close(info) }, 'Close'),
  )
}
