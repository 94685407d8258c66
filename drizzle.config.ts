import { defineConfig } from 'drizzle-kit'

export default defineConfig({
  dialect: 'turso',
  schema: './storage/tables.ts',
  out: './migrations',
  dbCredentials: {
    url: process.env.DATABASE_URL ?? 'file:./data/termkeep.db',
    authToken: process.env.DATABASE_AUTH_TOKEN,
  },
})
