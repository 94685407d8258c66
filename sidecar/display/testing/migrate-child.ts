/** Child process for the crash test: migrates legacy records slowly until it is killed. */
import { openStorage } from '../../../storage/client.ts'
import { migrateLegacyRecords } from '../legacy.ts'

const storage = await openStorage({ url: process.argv[2] })
await migrateLegacyRecords(storage.db, { afterRecord: () => new Promise((r) => setTimeout(r, 15)) })
storage.close()
