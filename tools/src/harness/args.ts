/**
 * commander argument parsers the tools share: integers and byte counts. A bad value throws
 * commander's InvalidArgumentError, which the command line turns into a usage error (status 2).
 */
import { InvalidArgumentError } from 'commander'
import { parseBytes } from './units'

/** commander parser: an integer ≥ 0. */
export function nonNegativeInt (value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected an integer ≥ 0')
  return n
}

/** commander parser: a positive integer. */
export function positiveInt (value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer')
  return n
}

/** commander parser: a byte count such as 4194304, 64KiB, 4M (binary) or 1MB (decimal). */
export function byteCount (value: string): number {
  const n = parseBytes(value)
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a size in bytes, e.g. 65536, 64KiB, 4MiB')
  return n
}
