/**
 * The MCP SDK's own client over real HTTP (Streamable HTTP) with a bearer token, and small
 * readers for termkeep's tool results: text blocks, the JSON facts block, the error envelope.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { startNodeApi } from '../../api/runtime/node.ts'
import type { Harness } from '../api/harness.ts'

export async function mcpClient(baseUrl: string, token: string): Promise<Client> {
  const client = new Client({ name: 'termkeep-test', version: '1' })
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  })
  await client.connect(transport)
  return client
}

/** The Node API over a harness's database and sidecar, served on a port, and the MCP clients a
 * test file opens on it (each with its own token); `close` ends the clients, then the API. */
export async function mcpStack(h: Harness) {
  const api = await startNodeApi({
    storage: h.storage,
    sidecarUrl: h.sidecar.url,
    sidecarSecret: h.sidecar.secret,
    host: '127.0.0.1',
    port: 0,
  })
  const open: Client[] = []
  return {
    api,
    async client(token: string): Promise<Client> {
      const client = await mcpClient(api.url, token)
      open.push(client)
      return client
    },
    async close(): Promise<void> {
      for (const client of open.splice(0)) await client.close().catch(() => {})
      await api.close()
    },
  }
}
export type McpStack = Awaited<ReturnType<typeof mcpStack>>

export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  timeoutMs = 60_000,
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, { timeout: timeoutMs })) as CallToolResult
}

/** The i-th text block of a result. */
export function textOf(result: CallToolResult, index = 0): string {
  const block = result.content[index]
  if (block?.type !== 'text') throw new Error(`no text block ${index} in ${JSON.stringify(result)}`)
  return block.text
}

/** A JSON result's value (structured content), or the facts block of a text result. */
export function factsOf(result: CallToolResult): any {
  if (result.isError) throw new Error(`tool error: ${textOf(result)}`)
  if (result.structuredContent) return result.structuredContent
  return JSON.parse(textOf(result, 1))
}

/** A tool error's `{code, message, …}`. */
export function errorOf(result: CallToolResult): { code: string; message: string; [key: string]: unknown } {
  if (!result.isError) throw new Error(`expected a tool error, got ${JSON.stringify(result).slice(0, 500)}`)
  return JSON.parse(textOf(result)).error
}
