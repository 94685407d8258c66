/**
 * Every import of every source file in the tree, resolved to a repository path or kept as a
 * package name. Parsing uses oxc (through `rolldown/utils`, the bundler vite already brings), so
 * type-only imports, re-exports, `import()` in code and in types, and worker entries
 * (`new URL('./worker.ts', import.meta.url)`) all count: each one is a dependency of the file.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, posix } from 'node:path'
import { parseSync } from 'rolldown/utils'

export interface Import {
  /** The importing file, relative to the root (`api/app.ts`). */
  from: string
  /** A repository path (`schema/errors.ts`) or a package specifier (`node:fs`, `hono/streaming`). */
  to: string
  /** True when `to` is a file of this repository. */
  local: boolean
  /** True for `import type` / `export type` (erased at compile time, still a dependency). */
  typeOnly: boolean
  line: number
}

const SOURCE = /\.(ts|mts|js|mjs)$/

/** The source files git knows or would add (tracked, plus untracked ones it does not ignore). */
export function sourceFiles(root: string): string[] {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' })
  return listed
    .split('\0')
    .filter((file) => SOURCE.test(file) && !file.endsWith('.d.ts') && existsSync(join(root, file)))
    .sort()
}

type Node = { type?: string; start?: number; [key: string]: unknown }

function stringValue(node: unknown): string | undefined {
  const n = node as Node | null
  if (n?.type === 'Literal' && typeof n.value === 'string') return n.value
  if (n?.type === 'TemplateLiteral' && (n.expressions as unknown[]).length === 0) {
    return ((n.quasis as Node[])[0]?.value as { cooked?: string })?.cooked
  }
  return undefined
}

function isImportMetaUrl(node: unknown): boolean {
  const n = node as Node | null
  const object = n?.object as Node | undefined
  return n?.type === 'MemberExpression' && object?.type === 'MetaProperty' && (n.property as Node)?.name === 'url'
}

/** The specifiers one file names, with whether each is type-only and where it stands. */
function specifiers(program: unknown): Array<{ specifier: string; typeOnly: boolean; at: number; url: boolean }> {
  const found: Array<{ specifier: string; typeOnly: boolean; at: number; url: boolean }> = []
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (!node || typeof node !== 'object') return
    const n = node as Node
    const at = n.start ?? 0
    switch (n.type) {
      case 'ImportDeclaration':
      case 'ExportAllDeclaration':
      case 'ExportNamedDeclaration': {
        const source = stringValue(n.source)
        if (source !== undefined) {
          const kind = n.importKind ?? n.exportKind
          const specs = (n.specifiers as Node[] | undefined) ?? []
          const allTypes = specs.length > 0 && specs.every((s) => (s.importKind ?? s.exportKind) === 'type')
          found.push({ specifier: source, typeOnly: kind === 'type' || (allTypes && n.type === 'ExportNamedDeclaration'), at, url: false })
        }
        break
      }
      case 'ImportExpression': {
        const source = stringValue(n.source)
        if (source !== undefined) found.push({ specifier: source, typeOnly: false, at, url: false })
        break
      }
      case 'TSImportType': {
        const argument = n.argument as Node
        const source = stringValue(argument?.type === 'TSLiteralType' ? argument.literal : (n.source ?? argument))
        if (source !== undefined) found.push({ specifier: source, typeOnly: true, at, url: false })
        break
      }
      case 'NewExpression': {
        const args = n.arguments as unknown[]
        const source = stringValue(args?.[0])
        if ((n.callee as Node)?.name === 'URL' && source !== undefined && isImportMetaUrl(args[1])) {
          found.push({ specifier: source, typeOnly: false, at, url: true })
        }
        break
      }
    }
    for (const key in n) if (key !== 'parent') visit(n[key])
  }
  visit(program)
  return found
}

function lineAt(text: string, offset: number): number {
  let line = 1
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++
  return line
}

/** The imports of `file` (relative to `root`). A relative specifier that names no file is skipped
 * when it came from `new URL(…)` (a data file or folder), and reported as `missing:` otherwise. */
export function importsOf(root: string, file: string): Import[] {
  const text = readFileSync(join(root, file), 'utf8')
  const lang = file.endsWith('ts') ? 'ts' : 'js'
  const { program, errors } = parseSync(file, text, { lang, sourceType: 'module' })
  if (errors.length > 0) throw new Error(`${file}: cannot parse: ${errors[0]!.message}`)
  const result: Import[] = []
  for (const { specifier, typeOnly, at, url } of specifiers(program)) {
    const line = lineAt(text, at)
    if (!specifier.startsWith('.')) {
      if (!url) result.push({ from: file, to: specifier, local: false, typeOnly, line })
      continue
    }
    const target = posix.normalize(posix.join(posix.dirname(file), specifier))
    const path = join(root, target)
    const isFile = existsSync(path) && statSync(path).isFile()
    if (url && !(isFile && SOURCE.test(target))) continue
    result.push({ from: file, to: isFile ? target : `missing:${target}`, local: true, typeOnly, line })
  }
  return result
}

/** The whole graph: every import of every source file under `root`. */
export function importGraph(root: string): Import[] {
  return sourceFiles(root).flatMap((file) => importsOf(root, file))
}
