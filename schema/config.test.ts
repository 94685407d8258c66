import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from './config.ts'

describe('parseConfig', () => {
  it('defaults everything for an empty environment', () => {
    expect(parseConfig({})).toEqual({
      dataDir: './data',
      databaseUrl: 'file:./data/termkeep.db',
      databaseAuthToken: undefined,
      host: '127.0.0.1',
      port: 8787,
      sidecarUrl: 'http://127.0.0.1:8788',
      sidecarSecret: undefined,
      adminToken: undefined,
      filesAllowOutside: false,
      allowedOrigins: [],
      allowedHosts: undefined,
    })
  })

  it('reads the allowed origins and hosts as lists, and refuses an origin with a path', () => {
    const config = parseConfig({
      TERMKEEP_ALLOWED_ORIGINS: 'https://tk.example.com, http://devbox:8787',
      TERMKEEP_ALLOWED_HOSTS: 'tk.example.com,devbox:8787,[fd00::1]',
    })
    expect([config.allowedOrigins, config.allowedHosts]).toEqual([
      ['https://tk.example.com', 'http://devbox:8787'],
      ['tk.example.com', 'devbox:8787', '[fd00::1]'],
    ])
    expect(() => parseConfig({ TERMKEEP_ALLOWED_ORIGINS: 'https://tk.example.com/app' })).toThrow(ConfigError)
    expect(() => parseConfig({ TERMKEEP_ALLOWED_HOSTS: 'tk.example.com/x' })).toThrow(ConfigError)
  })

  it('derives the database file from the data dir', () => {
    expect(parseConfig({ TERMKEEP_DATA_DIR: '/var/lib/tk/' }).databaseUrl).toBe('file:/var/lib/tk/termkeep.db')
  })

  it('accepts every supported database scheme', () => {
    for (const url of ['file:x.db', 'libsql://db.example', 'http://127.0.0.1:8080', 'https://h', 'ws://h:1', 'wss://h']) {
      expect(parseConfig({ DATABASE_URL: url }).databaseUrl).toBe(url)
    }
  })

  it.each([
    ['PORT', 'abc', 'an integer from 1 to 65535'],
    ['PORT', '0', 'an integer from 1 to 65535'],
    ['PORT', '70000', 'an integer from 1 to 65535'],
    ['PORT', '80.5', 'an integer from 1 to 65535'],
    ['DATABASE_URL', 'postgres://x', 'a libSQL URL starting with file: libsql: http: https: ws: wss:'],
    ['SIDECAR_URL', 'not a url', 'an http:// or https:// URL of the sidecar'],
    ['SIDECAR_URL', 'ftp://127.0.0.1:1', 'an http:// or https:// URL of the sidecar'],
    ['SIDECAR_SECRET', 'short', 'at least 16 printable characters, no spaces'],
    ['TERMKEEP_ADMIN_TOKEN', 'has spaces in it ok?', 'at least 16 printable characters, no spaces'],
    ['TERMKEEP_FILES_ALLOW_OUTSIDE', 'yes', 'one of 0, 1, true, false'],
    ['TERMKEEP_DATA_DIR', '   ', 'a directory path'],
  ])('rejects %s=%j with a one-line message naming it', (variable, value, allowed) => {
    let error: unknown
    try {
      parseConfig({ [variable]: value })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ConfigError)
    const message = (error as ConfigError).message
    expect(message).toBe(`termkeep: invalid ${variable}=${JSON.stringify(value)}: ${allowed}`)
    expect(message).not.toContain('\n')
  })

  it('parses flags and ports', () => {
    const config = parseConfig({ PORT: '9000', TERMKEEP_FILES_ALLOW_OUTSIDE: 'true', SIDECAR_URL: 'http://127.0.0.1:9/' })
    expect(config.port).toBe(9000)
    expect(config.filesAllowOutside).toBe(true)
    expect(config.sidecarUrl).toBe('http://127.0.0.1:9')
  })
})
