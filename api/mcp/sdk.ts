/**
 * The parts of the MCP SDK the server uses, imported in one place. The SDK's package exports map
 * `./*` to `./dist/esm/*` for code and to `./dist/esm/*.d.ts` for types, so its `.js` subpaths
 * have no types by the package's own map: tsc finds `index.d.ts` beside `index.js` anyway, Deno's
 * checker does not. The `@ts-types` comments (read by Deno, a comment to tsc) name the
 * declarations beside each module.
 */
// @ts-types="../../node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.d.ts"
export { Server } from '@modelcontextprotocol/sdk/server/index.js'
// @ts-types="../../node_modules/@modelcontextprotocol/sdk/dist/esm/server/webStandardStreamableHttp.d.ts"
export { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
// @ts-types="../../node_modules/@modelcontextprotocol/sdk/dist/esm/types.d.ts"
export {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
// @ts-types="../../node_modules/@modelcontextprotocol/sdk/dist/esm/types.d.ts"
export type { CallToolResult, ReadResourceResult, Resource, ResourceTemplate, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js'
// @ts-types="../../node_modules/@modelcontextprotocol/sdk/dist/esm/validation/types.d.ts"
export type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js'
