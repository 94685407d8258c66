/** This release of termkeep (package.json's version): the keeper and the sidecar tell each other,
 * and their logs say which release did what. */
import { readFileSync } from 'node:fs'

export const SOFTWARE_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version
