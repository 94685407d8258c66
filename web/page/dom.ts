/** A tiny element builder for the page: no framework, text always set as text (never as HTML). */
import { ApiError, UnreachableError } from '../client/api.ts'

type Child = Node | string | null | undefined | false
type Attrs = Record<string, string | number | boolean | undefined | ((event: Event) => void)>

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value)
    else if (value === true) element.setAttribute(name, '')
    else element.setAttribute(name, String(value))
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    element.append(child)
  }
  return element
}

/** Replaces an element's children. */
export function fill(parent: Element, ...children: Child[]): void {
  parent.replaceChildren(...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false))
}

/** A failed action in words for the page: the server's own message, or that it is unreachable
 * (never an exception's class name). */
export function failure(doing: string, error: unknown): string {
  if (error instanceof ApiError) return `${doing}: ${error.message}`
  if (error instanceof UnreachableError) return `${doing}: the termkeep server is not reachable. Check that it runs, then try again.`
  return `${doing}: ${(error as Error)?.message ?? String(error)}`
}
