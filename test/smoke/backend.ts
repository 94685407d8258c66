/**
 * What every runtime's smoke run stands on: a real libSQL server (sqld on a free loopback port),
 * a real sidecar process pointed at the same remote URL, a Node-side storage handle for minting
 * tokens directly in the database, and a workspace directory on disk.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createToken } from '../../storage/tokens.ts'
import { GRANTS, type Grant } from '../../schema/grants.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'
import { startSqld, type RunningSqld } from '../support/sqld.ts'

export interface SmokeBackend {
  databaseUrl: string
  sidecar: RunningSidecar
  storage: Storage
  /** A scratch directory (canonical path) for workspaces and files. */
  workdir: string
  /** Mints a token in the database and returns its secret. */
  token(grants?: readonly Grant[]): Promise<string>
  stop(): Promise<void>
}

export async function startBackend(): Promise<SmokeBackend> {
  const workdir = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-smoke-')))
  let sqld: RunningSqld | undefined
  let sidecar: RunningSidecar | undefined
  let storage: Storage | undefined
  const stop = async () => {
    await sidecar?.stop()
    storage?.close()
    await sqld?.stop()
    rmSync(workdir, { recursive: true, force: true })
  }
  try {
    sqld = await startSqld()
    // The sidecar migrates the remote database on start, like in production.
    sidecar = await startSidecar({ databaseUrl: sqld.url, dataDir: join(workdir, 'sidecar-data') })
    storage = await openStorage({ url: sqld.url })
    const db = storage.db
    return {
      databaseUrl: sqld.url,
      sidecar,
      storage,
      workdir,
      token: async (grants = GRANTS) => (await createToken(db, { name: 'smoke', grants, sessions: 'all' })).secret,
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}
