#!/usr/bin/env node
// The published entry: registers tsx so the TypeScript sources run as they are on Node 20.
import { register } from 'tsx/esm/api'

register()
await import('./main.ts')
