/**
 * A tool's input: its JSON Schema for `tools/list`, generated from the valibot schemas of the route
 * it calls (path parameters, query, JSON body) and of its own arguments, and the split of a call's
 * arguments back into those parts. Only the path parameters and the tool's own arguments are
 * checked here (a path must be safe to build, and own arguments have no route to check them);
 * query and body go to the route, whose validation answers exactly as it does over HTTP.
 */
import { toJsonSchema } from '@valibot/to-json-schema'
import * as v from 'valibot'
import { TermkeepError } from '../../schema/errors.ts'
import { JsonValue } from '../../schema/wire/common.ts'
import { describeIssues } from '../validate.ts'

type Json = Record<string, unknown>

export interface InputLayout {
  params?: v.GenericSchema
  query?: v.GenericSchema
  body?: v.GenericSchema
  /** The tool's own arguments (schema/wire/mcp.ts), validated here. */
  own?: v.GenericSchema
  /** Arguments the tool fills in when absent (a generated terminal id, a default geometry). */
  defaults?: Record<string, () => unknown>
}

export interface SplitArgs {
  params: Record<string, string>
  query: Record<string, string>
  body: Json | undefined
  own: Json
}

export interface ToolInput {
  /** `inputSchema` of tools/list: one object over every part. */
  schema: Json & { type: 'object' }
  split(args: Json | undefined): SplitArgs
}

/** Recursive schemas, rendered once as named definitions (`#/$defs/Name`) at the input's root. */
const DEFINITIONS = { JsonValue }

/** An object schema's properties and required keys; a union of objects gives every member's
 * properties and the keys all of them require (the route still checks which member it is). The
 * definitions its properties refer to are gathered into `defs`. */
function flatten(schema: v.GenericSchema, defs: Record<string, Json>): { properties: Record<string, Json>; required: string[] } {
  const json = toJsonSchema(schema, { errorMode: 'ignore', definitions: DEFINITIONS }) as Json
  Object.assign(defs, json.$defs as Record<string, Json> | undefined)
  const members = (json.anyOf as Json[] | undefined) ?? [json]
  const properties: Record<string, Json> = {}
  let required: string[] | undefined
  for (const member of members) {
    if (member.type !== 'object') throw new Error('a tool argument part must be an object schema')
    Object.assign(properties, member.properties as Record<string, Json>)
    const keys = (member.required as string[] | undefined) ?? []
    required = required === undefined ? keys : required.filter((k) => keys.includes(k))
  }
  return { properties: { ...properties }, required: required ?? [] }
}

/** Query values are strings on the wire; a digits-only one is offered as an integer to agents. */
const DIGITS = /^\^\\d\{1,\d+\}\$$/

function integerQuery(property: Json): Json | undefined {
  if (typeof property.pattern !== 'string' || !DIGITS.test(property.pattern)) return undefined
  const { pattern: _, type: __, default: fallback, ...rest } = property
  return { ...rest, type: 'integer', minimum: rest.minimum ?? 0, ...(fallback === undefined ? {} : { default: Number(fallback) }) }
}

const invalid = (message: string) => new TermkeepError('request/invalid', message)

/** Parses with the schema, or throws the message validate() gives a route's failure. */
function check(schema: v.GenericSchema, value: unknown, target: string): unknown {
  const checked = v.safeParse(schema, value)
  if (checked.success) return checked.output
  // valibot's issues are Standard Schema issues (path items carry `key`).
  throw invalid(describeIssues(target, checked.issues as unknown as Parameters<typeof describeIssues>[1]))
}

export function toolInput(layout: InputLayout): ToolInput {
  const defs: Record<string, Json> = {}
  const parts = {
    params: layout.params ? flatten(layout.params, defs) : undefined,
    query: layout.query ? flatten(layout.query, defs) : undefined,
    body: layout.body ? flatten(layout.body, defs) : undefined,
    own: layout.own ? flatten(layout.own, defs) : undefined,
  }
  const integers = new Set<string>()
  for (const [key, property] of Object.entries(parts.query?.properties ?? {})) {
    const integer = integerQuery(property)
    if (integer) {
      parts.query!.properties[key] = integer
      integers.add(key)
    }
  }
  const owner = new Map<string, keyof typeof parts>()
  const properties: Record<string, Json> = {}
  const required = new Set<string>()
  for (const name of ['params', 'query', 'body', 'own'] as const) {
    for (const [key, property] of Object.entries(parts[name]?.properties ?? {})) {
      if (owner.has(key)) throw new Error(`tool argument ${key} is both ${owner.get(key)} and ${name}`)
      owner.set(key, name)
      properties[key] = property
    }
    for (const key of parts[name]?.required ?? []) if (!layout.defaults?.[key]) required.add(key)
  }
  const schema = {
    type: 'object' as const,
    properties,
    required: [...required],
    additionalProperties: false,
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  }

  return {
    schema,
    split(args = {}) {
      if (typeof args !== 'object' || args === null || Array.isArray(args)) throw invalid('the arguments must be an object')
      const unknown = Object.keys(args).filter((key) => !owner.has(key))
      if (unknown.length > 0)
        throw invalid(`unknown argument ${unknown.join(', ')}; this tool takes ${[...owner.keys()].join(', ') || 'none'}`)
      const all: Json = { ...args }
      for (const [key, make] of Object.entries(layout.defaults ?? {})) if (all[key] === undefined) all[key] = make()
      const pick = (name: keyof typeof parts) => Object.fromEntries(Object.entries(all).filter(([key]) => owner.get(key) === name))
      const params = pick('params')
      if (layout.params) check(layout.params, params, 'param')
      const query: Record<string, string> = {}
      for (const [key, value] of Object.entries(pick('query'))) {
        if (typeof value === 'string') query[key] = value
        else if (integers.has(key) && Number.isSafeInteger(value)) query[key] = String(value)
        else throw invalid(`invalid query: ${key}: expected ${integers.has(key) ? 'an integer' : 'a string'}`)
      }
      const own = layout.own ? (check(layout.own, pick('own'), 'arguments') as Json) : pick('own')
      return { params: params as Record<string, string>, query, body: layout.body ? pick('body') : undefined, own }
    },
  }
}
