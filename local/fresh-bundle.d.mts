/** A build's inputs, by path relative to INSTALL_ROOT: [size, mtimeMs] as they were when read. */
export type BuildInputs = Record<string, [size: number, mtimeMs: number]>

export declare const INSTALL_ROOT: string
export declare function inputsUnchanged(inputs: BuildInputs): boolean
export declare function bundleCache(source: string): { cache: string; stem: string; index: string }
export declare function freshBundle(source: string): string | undefined
