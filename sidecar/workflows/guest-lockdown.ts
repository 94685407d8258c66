/**
 * Freezes the guest's built-ins before the script runs, so that nothing a script does to them
 * changes how the script API (guest.ts) behaves: every constructor, prototype and function
 * reachable from the standard globals is frozen (`Object.prototype.then = …`,
 * `Array.prototype[Symbol.iterator] = …`, `Map.prototype.get = …` fail). The global object itself
 * is not: a script may define and replace globals, but the API captured what it uses first.
 *
 * A frozen prototype makes an ordinary assignment of a property it has fail (`this.name = 'X'`
 * in an Error subclass, `obj.toString = f`), the "override mistake". The few properties code
 * commonly assigns that way become accessors that define the property on the object assigned
 * to, as SES does. SharedArrayBuffer is removed (a single-threaded guest has no use for it).
 *
 * Evaluated in the guest as source (program.ts): it refers to nothing outside its own body.
 */
export function lockdown(): void {
  const { Object, Reflect, WeakSet, TypeError } = globalThis
  const { freeze, getPrototypeOf, getOwnPropertyDescriptor, defineProperty } = Object
  const { ownKeys } = Reflect
  const OVERRIDABLE = ['constructor', 'name', 'message', 'toString', 'valueOf', 'toLocaleString']

  const tame = (object: object, key: string) => {
    const found = getOwnPropertyDescriptor(object, key)
    if (!found || !('value' in found) || !found.writable || !found.configurable) return
    const value = found.value
    defineProperty(object, key, {
      get: () => value,
      set(this: object, next: unknown) {
        if (this === object) throw new TypeError(`${key} of a built-in cannot be assigned`)
        defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true })
      },
      enumerable: found.enumerable,
      configurable: false,
    })
  }

  delete (globalThis as { SharedArrayBuffer?: unknown }).SharedArrayBuffer
  const done = new WeakSet<object>()
  const pending: unknown[] = hiddenIntrinsics()
  for (const name of ownKeys(globalThis)) {
    const value = getOwnPropertyDescriptor(globalThis, name)?.value
    if (value !== globalThis) pending.push(value)
  }
  while (pending.length > 0) {
    const value = pending.pop()
    if ((typeof value !== 'object' && typeof value !== 'function') || value === null || done.has(value)) continue
    done.add(value)
    for (const key of OVERRIDABLE) tame(value, key)
    for (const key of ownKeys(value)) {
      const property = getOwnPropertyDescriptor(value, key)!
      pending.push(property.value, property.get, property.set)
    }
    pending.push(getPrototypeOf(value))
    freeze(value)
  }

  /** Built-ins no global leads to, which scripts reach through the values they make: the
   * constructors of async and generator functions, the iterators' prototypes (Iterator.concat's
   * is one of its own in QuickJS), %ThrowTypeError%. */
  function hiddenIntrinsics(): unknown[] {
    const iterator = (value: Iterable<unknown>) => value[Symbol.iterator]()
    const values = [1].values() as unknown as { map: (f: (x: unknown) => unknown) => unknown }
    const { Iterator } = globalThis as unknown as { Iterator: { from: (iterator: object) => unknown; concat: () => unknown } }
    return [
      (async () => {}).constructor,
      function* () {}.constructor,
      async function* () {}.constructor,
      iterator([]),
      iterator(new Map()),
      iterator(new Set()),
      iterator(''),
      /x/[Symbol.matchAll](''),
      values.map((x) => x),
      Iterator.from({ next: () => ({ done: true, value: undefined }) }),
      Iterator.concat(),
      getOwnPropertyDescriptor(
        (function (this: unknown) {
          // biome-ignore lint/complexity/noArguments: its `callee` accessor is the intrinsic %ThrowTypeError%
          return arguments
        })(),
        'callee',
      )?.get,
    ]
  }
}
