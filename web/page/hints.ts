/**
 * Commands the page suggests, as code elements (never literal backticks), in the form that works
 * where a person runs them: `token create` writes the server's own database, so it runs in the
 * server's directory as `./termkeep`; `attach` works wherever the CLI is, named with the URL it
 * needs when the page is not at the CLI's default address.
 */
import { h } from './dom.ts'

/** The CLI's default server (cli/remote.ts): no TERMKEEP_URL needed when the page is there. */
const CLI_DEFAULT_ORIGIN = 'http://127.0.0.1:8787'

type Part = HTMLElement | string

export function signInHint(): Part[] {
  return [
    h('code', {}, 'npm start'),
    ' prints an admin token the first time it runs. Mint others in the server’s directory with ',
    h('code', {}, './termkeep token create --grant …'),
    ' (',
    h('code', {}, './termkeep token create --help'),
    ' lists the grants).',
  ]
}

/** `TERMKEEP_URL=… ` when the page is served from elsewhere than the CLI's default. */
function urlPrefix(origin = location.origin): string {
  return origin === CLI_DEFAULT_ORIGIN ? '' : `TERMKEEP_URL=${origin} `
}

export function attachHint(sessionId: string, terminalId: string): Part[] {
  return [
    'From a shell in termkeep’s directory, with ',
    h('code', {}, 'TERMKEEP_TOKEN'),
    ' set: ',
    h('code', { class: 'attach-command' }, `${urlPrefix()}./termkeep attach ${sessionId} ${terminalId}`),
    ' (after ',
    h('code', {}, 'npm link'),
    ': ',
    h('code', {}, 'termkeep attach …'),
    ' from anywhere).',
  ]
}
