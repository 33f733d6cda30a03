/**
 * The tools' heavier packages (plotting, tables, progress bars, statistics, JSON Schema) are
 * loaded here when a tool needs them, not at start-up, and a missing one is named in one line
 * with what to install. vega (the plots) is an optionalDependency of fastsock-tools: an install
 * with `--omit=optional` runs every tool without plots. The others are dependencies, so missing
 * means a broken or partial installation.
 */

/** Thrown when optional packages a tool needs are not installed; `code` ERR_FASTSOCK_MISSING_DEPENDENCY. */
export class MissingDependencyError extends Error {
  readonly code = 'ERR_FASTSOCK_MISSING_DEPENDENCY'
  /** The npm package(s) missing, space-separated: what `npm install` takes. */
  readonly packageName: string
  /** The same, one name per entry. */
  readonly packageNames: string[]
  constructor (packageNames: string | string[], forWhat: string, cause?: unknown) {
    const names = typeof packageNames === 'string' ? [packageNames] : packageNames
    const quoted = names.map((n) => `'${n}'`).join(', ')
    super(`${forWhat} needs the package${names.length > 1 ? 's' : ''} ${quoted}, not installed: ` +
      `run \`npm install ${names.join(' ')}\``, { cause })
    this.name = 'MissingDependencyError'
    this.packageNames = names
    this.packageName = names.join(' ')
  }
}

function isNotFound (err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND'
}

/**
 * `require(packageName)` for a tool's optional dependency. Throws MissingDependencyError (naming
 * the package and `forWhat`, e.g. "fastsock pipe's plot") when it is not installed; any other
 * load failure is rethrown as it is.
 */
export function loadOptional<T> (packageName: string, forWhat: string): T {
  try {
    return require(packageName) as T
  } catch (err) {
    if (isNotFound(err)) throw new MissingDependencyError(packageName, forWhat, err)
    throw err
  }
}

/**
 * `require.resolve(packageName)` for an optional dependency loaded otherwise (an ESM-only package
 * goes through import()): its entry file, or MissingDependencyError as loadOptional.
 */
export function resolveOptional (packageName: string, forWhat: string): string {
  try {
    return require.resolve(packageName)
  } catch (err) {
    if (isNotFound(err)) throw new MissingDependencyError(packageName, forWhat, err)
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

/** Throws one MissingDependencyError naming every package of `packageNames` that is not installed. */
export function requireOptional (packageNames: string[], forWhat: string): void {
  const missing = packageNames.filter((p) => !hasOptional(p))
  if (missing.length > 0) throw new MissingDependencyError(missing, forWhat)
}
