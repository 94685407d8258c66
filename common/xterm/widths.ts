/**
 * Character widths, the same everywhere a termkeep screen is drawn: the sidecar's emulators, the
 * web page and the CLI's local screen all load Unicode 11 widths (@xterm/addon-unicode11, pinned).
 * xterm.js alone measures with Unicode 6, where most emoji are one cell; tmux, glibc's wcwidth and
 * current terminals draw them two cells wide, so a program that lays out a line for two cells would
 * see its rows shift in every view. Pure: it only needs the addon, so the page bundles it too.
 */
// Named import: Node detects it in the CommonJS build, bundlers take the ESM one.
import { Unicode11Addon } from '@xterm/addon-unicode11'

/** What both @xterm/xterm and @xterm/headless terminals offer (with `allowProposedApi: true`). */
interface WidthTerminal {
  loadAddon(addon: InstanceType<typeof Unicode11Addon>): void
  unicode: { activeVersion: string }
}

export const UNICODE_VERSION = '11'

/** Loads Unicode 11 widths into a terminal before it sees any output. */
export function useUnicode11(terminal: WidthTerminal): void {
  terminal.loadAddon(new Unicode11Addon())
  terminal.unicode.activeVersion = UNICODE_VERSION
}
