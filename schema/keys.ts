/**
 * Named keys as tmux's `send-keys` spells them (`Enter`, `C-c`, `M-x`, `Up`, `S-Tab`…), turned into
 * the bytes an xterm-256color terminal sends for them. Shared by every client that types for a
 * user or an agent (the CLI's `send`, the MCP `send` tool), so a name means the same everywhere.
 *
 * Pure: the only state that changes a key's bytes is the terminal's application cursor mode
 * (DECCKM; arrows and Home/End send SS3 instead of CSI), which the caller passes in.
 */

export interface KeyModes {
  /** DECCKM is set (vim, less): unmodified arrows, Home and End send `ESC O x`. */
  applicationCursorKeys?: boolean
}

const ESC = '\x1b'

/** Keys whose xterm form is `CSI x` (or `SS3 x` under DECCKM), with modifiers `CSI 1;m x`. */
const CURSOR: Record<string, string> = { Up: 'A', Down: 'B', Right: 'C', Left: 'D', Home: 'H', End: 'F' }
/** Keys whose xterm form is `CSI n ~`, with modifiers `CSI n;m ~`. */
const TILDE: Record<string, number> = {
  Insert: 2,
  Delete: 3,
  PageUp: 5,
  PageDown: 6,
  F5: 15,
  F6: 17,
  F7: 18,
  F8: 19,
  F9: 20,
  F10: 21,
  F11: 23,
  F12: 24,
}
/** F1–F4 are `SS3 P..S`, with modifiers `CSI 1;m P..S`. */
const SS3_FUNCTION: Record<string, string> = { F1: 'P', F2: 'Q', F3: 'R', F4: 'S' }
/** Keys that are one fixed byte sequence. */
const PLAIN: Record<string, string> = { Enter: '\r', Tab: '\t', Space: ' ', Escape: ESC, BSpace: '\x7f' }
/** tmux's other spellings of the same keys. */
const ALIASES: Record<string, string> = {
  PPage: 'PageUp',
  PgUp: 'PageUp',
  NPage: 'PageDown',
  PgDn: 'PageDown',
  IC: 'Insert',
  DC: 'Delete',
  BTab: 'S-Tab',
  Esc: 'Escape',
  Backspace: 'BSpace',
  Return: 'Enter',
}

/** Every key name accepted besides single characters and their modifier forms (for help texts). */
export const KEY_NAMES: readonly string[] = [
  ...Object.keys(PLAIN),
  ...Object.keys(CURSOR),
  ...Object.keys(TILDE),
  ...Object.keys(SS3_FUNCTION),
  ...Object.keys(ALIASES),
]
/** tmux looks key names up case-insensitively (`enter`, `PGUP`, `f5`); single characters keep
 * their case (`a` is not `A`). */
const NAMES_BY_LOWER = new Map(KEY_NAMES.map((name) => [name.toLowerCase(), name]))

interface Modifiers {
  ctrl: boolean
  meta: boolean
  shift: boolean
}

/** xterm's modifier parameter: 1 + shift + 2·alt + 4·ctrl. */
const modifierParam = (m: Modifiers) => 1 + (m.shift ? 1 : 0) + (m.meta ? 2 : 0) + (m.ctrl ? 4 : 0)

/** The byte a control key sends (C-a = 0x01 … C-z, C-@ = NUL, C-[ = ESC, C-? = DEL), if any. */
function control(char: string): string | undefined {
  if (char === '?') return '\x7f'
  if (char === ' ' || char === '2') return '\x00'
  const code = char.toUpperCase().charCodeAt(0)
  if (char.length === 1 && code >= 0x40 && code <= 0x5f) return String.fromCharCode(code - 0x40)
  return undefined
}

/** Splits `C-M-S-x` (tmux also takes `^x` for `C-x`) into modifiers and the key itself. */
function splitModifiers(name: string): { key: string; mods: Modifiers } {
  const mods: Modifiers = { ctrl: false, meta: false, shift: false }
  let rest = name
  for (;;) {
    const m = /^([CMScms])-(.+)$/.exec(rest)
    if (m) {
      const which = m[1].toUpperCase()
      if (which === 'C') mods.ctrl = true
      else if (which === 'M') mods.meta = true
      else mods.shift = true
      rest = m[2]
      continue
    }
    if (rest.length === 2 && rest[0] === '^') {
      mods.ctrl = true
      rest = rest[1]
    }
    const name = rest.length > 1 ? (NAMES_BY_LOWER.get(rest.toLowerCase()) ?? rest) : rest
    return { key: ALIASES[name] ?? name, mods }
  }
}

/**
 * The bytes for one tmux key name, or undefined when the name is not a key. A single character is
 * itself (`a`, `é`), so `send-keys` of literal text and of names can share one list.
 */
export function keyBytes(name: string, modes: KeyModes = {}): string | undefined {
  if (name.length === 0) return undefined
  const { key: spelled, mods } = splitModifiers(name)
  // An alias may itself carry a modifier (BTab = S-Tab).
  const aliased =
    spelled !== name && /^[CMS]-/.test(spelled)
      ? splitModifiers(spelled)
      : { key: spelled, mods: { ctrl: false, meta: false, shift: false } }
  const key = aliased.key
  const all: Modifiers = {
    ctrl: mods.ctrl || aliased.mods.ctrl,
    meta: mods.meta || aliased.mods.meta,
    shift: mods.shift || aliased.mods.shift,
  }
  const modified = all.ctrl || all.meta || all.shift
  if (key in CURSOR) {
    if (modified) return `${ESC}[1;${modifierParam(all)}${CURSOR[key]}`
    return `${ESC}${modes.applicationCursorKeys ? 'O' : '['}${CURSOR[key]}`
  }
  if (key in TILDE) return modified ? `${ESC}[${TILDE[key]};${modifierParam(all)}~` : `${ESC}[${TILDE[key]}~`
  if (key in SS3_FUNCTION) return modified ? `${ESC}[1;${modifierParam(all)}${SS3_FUNCTION[key]}` : `${ESC}O${SS3_FUNCTION[key]}`
  if (key === 'Tab' && all.shift && !all.ctrl) return `${all.meta ? ESC : ''}${ESC}[Z`
  let bytes: string | undefined
  if (key in PLAIN) bytes = PLAIN[key]
  else if ([...key].length === 1) bytes = key
  if (bytes === undefined) return undefined
  if (all.ctrl) {
    const ctrl = control(key === 'Space' ? ' ' : bytes)
    if (ctrl === undefined) return undefined
    bytes = ctrl
  } else if (all.shift && bytes.length === 1 && /[a-z]/.test(bytes)) {
    bytes = bytes.toUpperCase()
  }
  return all.meta ? ESC + bytes : bytes
}

/** `text` as is, then each key by name: what one send-keys write types (names already checked). */
export function typedInput(text: string, keys: readonly string[], modes: KeyModes = {}): string {
  return text + keys.map((name) => keyBytes(name, modes) ?? '').join('')
}
