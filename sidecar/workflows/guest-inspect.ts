/**
 * util.inspect's look for the values a script logs, made in the guest (there is no host util to
 * ask): `inspector()` makes the function when the API is installed. Strings quoted, arrays
 * `[ 1, 2 ]`, objects `{ a: 1 }`, `[Object]` past `depth`, `[Circular]`, class names kept. The
 * script's values are read by index, key and the captured built-ins, never through a method the
 * script could have put on them; a value whose own getters or proxy traps throw shows as
 * `[Uninspectable]`.
 *
 * Evaluated in the guest as source (program.ts): it refers to nothing outside its own body.
 */
export function inspector(): (value: unknown, depth: number) => string {
  // Captured when the API is installed, before the script runs: it may replace the globals.
  const { Object, Array, String, Number, Function, Error, Map, Set, Date, RegExp, Reflect, Symbol } = globalThis
  const { keys, getPrototypeOf, is } = Object
  const { apply } = Reflect
  const { isArray } = Array
  const fnToString = Function.prototype.toString
  const mapForEach = Map.prototype.forEach
  const setForEach = Set.prototype.forEach
  const MAX_ENTRIES = 100
  return (value, depth) => inspect(value, depth)
  function inspect(value: unknown, depth: number): string {
    const seen: object[] = []
    const quote = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`
    const key = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : quote(name))
    const list = (open: string, items: string[], close: string, total: number) => {
      if (total > items.length) items.push(`... ${total - items.length} more item${total - items.length === 1 ? '' : 's'}`)
      return items.length === 0 ? `${open}${close}` : `${open} ${items.join(', ')} ${close}`
    }
    const collection = (item: Map<unknown, unknown> | Set<unknown>, level: number): string[] => {
      const entries: string[] = []
      const take = (v: unknown, k: unknown) => {
        if (entries.length < MAX_ENTRIES) entries.push(item instanceof Map ? `${show(k, level)} => ${show(v, level)}` : show(v, level))
      }
      apply(item instanceof Map ? mapForEach : setForEach, item, [take])
      return entries
    }
    const show = (item: unknown, level: number): string => {
      if (typeof item === 'string') return quote(item)
      if (typeof item === 'bigint') return `${item}n`
      if (typeof item === 'number') return is(item, -0) ? '-0' : String(item)
      if (typeof item === 'symbol') return apply(Symbol.prototype.toString, item, [])
      if (typeof item === 'function') {
        const source = apply(fnToString, item, [])
        return `[${/^class\b/.test(source) ? 'class' : 'Function'}${item.name ? `: ${String(item.name)}` : ' (anonymous)'}]`
      }
      if (typeof item !== 'object' || item === null) return String(item)
      if (seen.includes(item)) return '[Circular]'
      try {
        return shown(item, level)
      } catch {
        return '[Uninspectable]'
      }
    }
    const shown = (item: object, level: number): string => {
      if (item instanceof Error) return `[${String(item.name)}: ${String(item.message)}]`
      if (item instanceof Date)
        return Number.isNaN(apply(Date.prototype.getTime, item, [])) ? 'Invalid Date' : apply(Date.prototype.toISOString, item, [])
      if (item instanceof RegExp) return `/${String(item.source)}/${String(item.flags)}`
      const proto = getPrototypeOf(item)
      const name = proto === null ? '[Object: null prototype]' : (String(proto.constructor?.name ?? '') as string)
      const array = isArray(item)
      const length = array ? (item as unknown[]).length : 0
      if (level > depth) {
        if (array) return length === 0 ? '[]' : '[Array]'
        return keys(item).length === 0 && name === 'Object' ? '{}' : `[${name && name !== '[Object: null prototype]' ? name : 'Object'}]`
      }
      seen.push(item)
      try {
        const prefix = name === 'Object' || name === 'Array' ? '' : `${name} `
        if (array) {
          const entries: string[] = []
          for (let i = 0; i < length && i < MAX_ENTRIES; i++) entries.push(show((item as unknown[])[i], level + 1))
          return prefix + list('[', entries, ']', length)
        }
        if (item instanceof Map || item instanceof Set)
          return `${name}(${item.size}) ${list('{', collection(item, level + 1), '}', item.size)}`
        const names = keys(item)
        const entries: string[] = []
        for (let i = 0; i < names.length && i < MAX_ENTRIES; i++) {
          entries.push(`${key(names[i])}: ${show((item as Record<string, unknown>)[names[i]], level + 1)}`)
        }
        return prefix + list('{', entries, '}', names.length)
      } finally {
        seen.pop()
      }
    }
    return show(value, 0)
  }
}
