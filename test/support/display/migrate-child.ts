/**
 * Child process for the crash test: migrates legacy records slowly until it is killed. It stops
 * making progress halfway (the wait after record 60 never ends), so however late the kill comes
 * it lands mid-run, never after the last record.
 */
import { openStorage } from '../../../storage/client.ts'
import { migrateLegacyRecords } from '../../../sidecar/display/legacy.ts'

const STALL_AFTER = 60

const storage = await openStorage({ url: process.argv[2] })
let done = 0
await migrateLegacyRecords(storage.db, {
  afterRecord: () => new Promise<void>((resolve) => (++done < STALL_AFTER ? setTimeout(resolve, 15) : undefined)),
})
storage.close()
