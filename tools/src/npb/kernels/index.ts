/**
 * The registry of `fastsock npb`'s kernels: name -> module, each loaded only when asked for (a
 * kernel's tables are not built for a run of another). A kernel is a module of this folder that
 * exports `kernel: NpbKernel` (tools/src/npb/types.ts). A build without one of them (its module
 * absent) answers with KernelUnavailableError, code ERR_NPB_KERNEL_UNAVAILABLE.
 */
import type { KernelName, NpbKernel } from '../types'

/** Thrown by loadKernel for a kernel whose module is not in this build; code ERR_NPB_KERNEL_UNAVAILABLE. */
export class KernelUnavailableError extends Error {
  readonly code = 'ERR_NPB_KERNEL_UNAVAILABLE'
  constructor (readonly kernel: string, cause?: unknown) {
    super(`kernel '${kernel}' is not available in this build of fastsock-tools (its module ./kernels/${kernel} is absent)`, { cause })
    this.name = 'KernelUnavailableError'
  }
}

/* eslint-disable @typescript-eslint/no-var-requires */
/** Each kernel's loader: a require of its module, made on first use. */
const LOADERS: Record<KernelName, () => { kernel: NpbKernel }> = {
  cg: () => require('./cg'),
  ep: () => require('./ep'),
  ft: () => require('./ft'),
  is: () => require('./is'),
  mg: () => require('./mg')
}
/* eslint-enable @typescript-eslint/no-var-requires */

/** The kernels' names, in NPB's order. */
export const KERNEL_NAMES = Object.keys(LOADERS) as KernelName[]

/** True when `name` is one of NPB's kernels that `fastsock npb` knows (available or not). */
export function isKernelName (name: string): name is KernelName {
  return Object.prototype.hasOwnProperty.call(LOADERS, name)
}

/**
 * The kernel `name`, its module loaded now. Throws KernelUnavailableError when the module is
 * absent from this build, TypeError (ERR_INVALID_ARG_VALUE) for a name that is not a kernel.
 */
export function loadKernel (name: string): NpbKernel {
  if (!isKernelName(name)) throw Object.assign(new TypeError(`unknown NPB kernel '${name}': one of ${KERNEL_NAMES.join(', ')}`), { code: 'ERR_INVALID_ARG_VALUE' })
  let mod: { kernel: NpbKernel }
  try {
    mod = LOADERS[name]()
  } catch (err) {
    const e = err as { code?: string, message?: string }
    // Only the kernel's own module missing means "not in this build"; anything else is a bug to see.
    if (e?.code === 'MODULE_NOT_FOUND' && (e.message ?? '').includes(`'./${name}'`)) throw new KernelUnavailableError(name, err)
    throw err
  }
  return mod.kernel
}

/** Whether the module of kernel `name` is in this build (loads it). */
export function kernelAvailable (name: KernelName): boolean {
  try {
    loadKernel(name)
    return true
  } catch (err) {
    if (err instanceof KernelUnavailableError) return false
    throw err
  }
}
