/** The emulator's default palette and the X11 colour specs that OSC 4/10/11/12 carry. */
import type { Palette } from '../../schema/wire/display.ts'

/** xterm.js's built-in theme (what @xterm/headless and a default browser xterm.js render with). */
export const DEFAULT_PALETTE: Palette['defaults'] = {
  foreground: '#ffffff',
  background: '#000000',
  cursor: '#ffffff',
  ansi: [
    '#2e3436',
    '#cc0000',
    '#4e9a06',
    '#c4a000',
    '#3465a4',
    '#75507b',
    '#06989a',
    '#d3d7cf',
    '#555753',
    '#ef2929',
    '#8ae234',
    '#fce94f',
    '#729fcf',
    '#ad7fa8',
    '#34e2e2',
    '#eeeeec',
  ],
}

function hex2(component: string): string | undefined {
  if (!/^[0-9a-f]{1,4}$/i.test(component)) return undefined
  // Scale an n-digit hex component to 8 bits, as XParseColor does.
  const value = parseInt(component, 16) / (16 ** component.length - 1)
  return Math.round(value * 255)
    .toString(16)
    .padStart(2, '0')
}

/**
 * `rgb:r/g/b` (1–4 hex digits each) or `#rgb` / `#rrggbb` / `#rrrgggbbb` / `#rrrrggggbbbb` →
 * `#rrggbb`; anything else (queries `?`, colour names) → undefined.
 */
export function parseColorSpec(spec: string): string | undefined {
  const s = spec.trim().toLowerCase()
  if (s.startsWith('rgb:')) {
    const parts = s.slice(4).split('/')
    if (parts.length !== 3) return undefined
    const hex = parts.map(hex2)
    return hex.every((h) => h !== undefined) ? `#${hex.join('')}` : undefined
  }
  const m = /^#([0-9a-f]+)$/.exec(s)
  if (!m || m[1].length % 3 !== 0 || m[1].length > 12) return undefined
  const n = m[1].length / 3
  // #rgb style specs hold the most significant bits: pad each component on the right.
  const parts = [0, 1, 2].map((i) =>
    m[1]
      .slice(i * n, (i + 1) * n)
      .padEnd(2, '0')
      .slice(0, 2),
  )
  return `#${parts.join('')}`
}
