/**
 * The command-line tools' heavy dependencies (plotting, tables, progress bars, statistics) are
 * optionalDependencies: a project that installs fastsock as its `net` replacement with
 * `--omit=optional` does not get them, and the library never loads them. A tool loads each one
 * here when it needs it, and says plainly what to install when it is absent.
 */

/** Thrown when an optional package a tool needs is not installed; `code` ERR_FASTSOCK_MISSING_DEPENDENCY. */
export class MissingDependencyError extends Error {
  readonly code = 'ERR_FASTSOCK_MISSING_DEPENDENCY'
  /** The npm package that is missing. */
  readonly packageName: string
  constructor (packageName: string, forWhat: string, cause: unknown) {
    super(`${forWhat} needs the optional package '${packageName}', which is not installed: ` +
      `run \`npm install ${packageName}\` (or install fastsock without --omit=optional)`, { cause })
    this.name = 'MissingDependencyError'
    this.packageName = packageName
  }
}

/**
 * `require(packageName)` for a tool's optional dependency. Throws MissingDependencyError (naming
 * the package and `forWhat`, e.g. 'the plot of fastsock pipe') when it is not installed; any other
 * load failure is rethrown as it is.
 */
export function loadOptional<T> (packageName: string, forWhat: string): T {
  try {
    return require(packageName) as T
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') throw new MissingDependencyError(packageName, forWhat, err)
    throw err
  }
}

/** True when the optional package can be resolved from here (no load). */
export function hasOptional (packageName: string): boolean {
  try {
    require.resolve(packageName)
    return true
  } catch {
    return false
  }
}
