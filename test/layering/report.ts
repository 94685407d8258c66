/** `node --import tsx test/layering/report.ts [root]`: prints the layering findings of a tree. */
import { resolve } from 'node:path'
import { importGraph } from './imports.ts'
import { checkLayering } from './rules.ts'

const root = resolve(process.argv[2] ?? '.')
const findings = checkLayering(importGraph(root))
for (const f of findings) console.log(`${f.file}:${f.line} ${f.message}`)
console.log(`${findings.length} finding(s)`)
