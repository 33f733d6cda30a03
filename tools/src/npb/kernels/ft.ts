/**
 * NPB FT: the 3-D FFT PDE kernel (NAS report RNR-94-007 and NPB 3.4's NPB3.4-MPI/FT). A
 * complex field u of nx × ny × nz pseudo-random values is transformed forward once; then each
 * of niter steps multiplies the spectrum by exp(−4απ²|k|² t) (applied cumulatively, one factor
 * per step: `evolve`), transforms it back and sums 1024 fixed elements (the checksum).
 *
 * Decomposition and messages as NPB-MPI's default layouts for P ranks (a power of two): one rank
 * holds the whole field (0-D layout); P ≤ nz ranks hold slabs (1-D layout): z-slabs of the
 * (x, y, z) field for the x and y transforms, y-slabs of the transposed (z, x, y) field for the
 * z transform, the transpose between them one MPI_Alltoall of the whole slab (nx·ny·nz / P
 * complex per rank, split in P blocks). Per step one reduce (SUM to rank 0) of the checksum.
 * NPB's 2-D layout (P > nz) is not offered.
 *
 * Complex values are interleaved re/im in one Float64Array per field, flattened with the first
 * index fastest (Fortran's order), so the slabs and transposes are the reference's.
 *
 * Timed (as the reference): the index map, the initial conditions, the FFT set-up, the forward
 * FFT, the niter steps with their checksums, and the verification; a whole untimed pass of the
 * set-up and forward FFT comes first. Verification: each step's checksum within a relative 1e-12
 * of the reference's. Mop/s: ntotal (14.8157 + 7.19641 ln ntotal + (5.23518 + 7.21113 ln ntotal)
 * niter) / seconds / 1e6. The time is rank 0's (the reference prints rank 0's timer).
 */
import type { Comm } from 'fastsock/mpi'
import type { KernelOptions, KernelResult, MpiModule, NpbClass, NpbKernel } from '../types'
import { A as MULT, power46, randlc, vranlc } from '../random'
import { fortranExp } from '../format'
import { completeLater } from './cg/blocking'
import { LineFft, fftAxis1, fftAxis2, fftAxis3 } from './ft/fft'
import { FT_CLASSES, type FtParams } from './ft/params'

const EPSILON = 1e-12
const SEED = 314159265
const ALPHA = 1e-6

/** One rank's layout: the field's dims before (layout 1, 2) and after (layout 3) the transpose, and its slab offsets. */
interface Layout {
  /** 0: the whole field on one rank; 1: slabs. */
  type: 0 | 1
  np: number
  me: number
  nx: number
  ny: number
  nz: number
  /** Complex values per rank. */
  ntdivnp: number
  /** Layout 1 (x, y, z local): the first z of this rank's slab (0-based) and its depth. */
  z0: number
  nzLocal: number
  /** Layout 3 (z, x, y local) in the 1-D layout: the first y of this rank's slab and its width. */
  y0: number
  nyLocal: number
}

function makeLayout (p: FtParams, np: number, me: number): Layout {
  const { nx, ny, nz } = p
  if (np === 1) return { type: 0, np, me, nx, ny, nz, ntdivnp: nx * ny * nz, z0: 0, nzLocal: nz, y0: 0, nyLocal: ny }
  return { type: 1, np, me, nx, ny, nz, ntdivnp: nx * ny * nz / np, z0: me * nz / np, nzLocal: nz / np, y0: me * ny / np, nyLocal: ny / np }
}

/**
 * exp(−4απ² (kx² + ky² + kz²)) per element of the transformed field's layout (NPB's
 * compute_indexmap), the wave numbers folded into [−n/2, n/2). Formed as the product of the three
 * axes' factors (one exp per wave number instead of one per element: within 2 ulp of the
 * reference's single exp, far inside FT's 1e-12).
 */
function indexMap (L: Layout, tw: Float64Array): void {
  const ap = -4 * ALPHA * Math.PI * Math.PI
  const { nx, ny, nz } = L
  const factors = (n: number): Float64Array => {
    const f = new Float64Array(n)
    for (let i = 0; i < n; i++) { const k = ((i + n / 2) % n) - n / 2; f[i] = Math.exp(ap * k * k) }
    return f
  }
  const ex = factors(nx)
  const ey = factors(ny)
  const ez = factors(nz)
  if (L.type === 0) {
    for (let k = 0; k < nz; k++) {
      for (let j = 0; j < ny; j++) {
        const fjk = ey[j] * ez[k]
        let at = nx * (j + ny * k)
        for (let i = 0; i < nx; i++, at++) tw[at] = ex[i] * fjk
      }
    }
  } else {
    // (z, x, y local)
    for (let j = 0; j < L.nyLocal; j++) {
      for (let i = 0; i < nx; i++) {
        const fij = ex[i] * ey[j + L.y0]
        let at = nz * (i + nx * j)
        for (let k = 0; k < nz; k++, at++) tw[at] = ez[k] * fij
      }
    }
  }
}

/**
 * The pseudo-random field in layout 1 (NPB's compute_initial_conditions): the generator's
 * sequence runs through the whole field in x, y, z order, two values (re, im) per element; each
 * plane of this rank's slab starts where the sequence reaches it.
 */
function initialConditions (L: Layout, u: Float64Array): void {
  const { nx, ny } = L
  const start = new Float64Array([SEED])
  randlc(start, power46(MULT, 2 * nx * (L.z0 * ny)))
  const an = power46(MULT, 2 * nx * ny)
  const x0 = new Float64Array(1)
  for (let k = 0; k < L.nzLocal; k++) {
    x0[0] = start[0]
    vranlc(2 * nx * ny, x0, MULT, u, 2 * nx * ny * k)
    if (k !== L.nzLocal - 1) randlc(start, an)
  }
}

/** u0 *= twiddle (complex by real), u1 = u0 (NPB's evolve). */
function evolve (u0: Float64Array, u1: Float64Array, tw: Float64Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const t = tw[i]
    const re = u0[2 * i] * t
    const im = u0[2 * i + 1] * t
    u0[2 * i] = re; u0[2 * i + 1] = im
    u1[2 * i] = re; u1[2 * i + 1] = im
  }
}

/** xout (n2 × n1) = transpose of xin (n1 × n2), complex, first index fastest, in 32 × 32 tiles (NPB's transpose2_local). */
function transposeLocal (n1: number, n2: number, xin: Float64Array, xout: Float64Array): void {
  const T = 32
  if (n1 < T || n2 < T) {
    for (let j = 0; j < n2; j++) for (let i = 0; i < n1; i++) { const s = 2 * (i + n1 * j); const d = 2 * (j + n2 * i); xout[d] = xin[s]; xout[d + 1] = xin[s + 1] }
    return
  }
  for (let j0 = 0; j0 < n2; j0 += T) {
    for (let i0 = 0; i0 < n1; i0 += T) {
      for (let i = i0; i < i0 + T; i++) {
        let d = 2 * (j0 + n2 * i)
        let s = 2 * (i + n1 * j0)
        const step = 2 * n1
        for (let j = 0; j < T; j++, d += 2, s += step) { xout[d] = xin[s]; xout[d + 1] = xin[s + 1] }
      }
    }
  }
}

/**
 * After the alltoall: xin holds np blocks (n2 × n1/np each, block p from rank p); xout
 * (n2·np × n1/np) places block p at rows p·n2 (NPB's transpose2_finish).
 */
function transposeFinish (n1: number, n2: number, np: number, xin: Float64Array, xout: Float64Array): void {
  const cols = n1 / np
  for (let p = 0; p < np; p++) {
    for (let j = 0; j < cols; j++) {
      let s = 2 * (n2 * (j + cols * p))
      let d = 2 * (p * n2 + n2 * np * j)
      for (let i = 0; i < 2 * n2; i++) xout[d++] = xin[s++]
    }
  }
}

/** The 3-D transforms of one rank: the FFT engine, and the transposes' alltoall. */
class Fft3d {
  readonly f: LineFft
  constructor (private readonly L: Layout, private readonly comm: Comm) {
    this.f = new LineFft(Math.max(L.nx, L.ny, L.nz))
  }

  /** The transpose (n1 × n2 → n2 × n1 across ranks): local transpose, alltoall, finish; x1 → x2 (x1 is scratch). */
  private async transpose (n1: number, n2: number, x1: Float64Array, x2: Float64Array): Promise<void> {
    transposeLocal(n1, n2, x1, x2)
    await this.comm.alltoall(x2, x1)
    transposeFinish(n1, n2, this.L.np, x1, x2)
  }

  /** Forward (layout 1 in x1 → layout 3 in x2) or inverse (layout 3 in x1 → layout 1 in x2); x1 is overwritten. */
  async run (dir: 1 | -1, x1: Float64Array, x2: Float64Array): Promise<void> {
    const { nx, ny, nz, nzLocal, nyLocal } = this.L
    const f = this.f
    if (this.L.type === 0) {
      if (dir === 1) {
        fftAxis1(f, 1, nx, ny, nz, x1, x1)
        fftAxis2(f, 1, nx, ny, nz, x1, x1)
        fftAxis3(f, 1, nx, ny, nz, x1, x2)
      } else {
        fftAxis3(f, -1, nx, ny, nz, x1, x1)
        fftAxis2(f, -1, nx, ny, nz, x1, x1)
        fftAxis1(f, -1, nx, ny, nz, x1, x2)
      }
    } else if (dir === 1) {
      fftAxis1(f, 1, nx, ny, nzLocal, x1, x1)
      fftAxis2(f, 1, nx, ny, nzLocal, x1, x1)
      await this.transpose(nx * ny, nzLocal, x1, x2)
      fftAxis1(f, 1, nz, nx, nyLocal, x2, x2)
    } else {
      fftAxis1(f, -1, nz, nx, nyLocal, x1, x1)
      await this.transpose(nz, nx * nyLocal, x1, x2)
      fftAxis2(f, -1, nx, ny, nzLocal, x2, x2)
      fftAxis1(f, -1, nx, ny, nzLocal, x2, x2)
    }
  }
}

/** Σ of the 1024 sampled elements (those in this rank's slab of layout 1) / ntotal, into chk (re, im). */
function localChecksum (L: Layout, u: Float64Array, chk: Float64Array): void {
  let re = 0
  let im = 0
  for (let j = 1; j <= 1024; j++) {
    const q = j % L.nx
    const r = (3 * j) % L.ny
    const s = (5 * j) % L.nz
    if (s < L.z0 || s >= L.z0 + L.nzLocal) continue
    const at = 2 * (q + L.nx * (r + L.ny * (s - L.z0)))
    re += u[at]; im += u[at + 1]
  }
  const ntotal = L.nx * L.ny * L.nz
  chk[0] = re / ntotal
  chk[1] = im / ntotal
}

async function run (mpi: MpiModule, comm: Comm, cls: NpbClass, opts: KernelOptions): Promise<KernelResult> {
  const why = checkProcs(cls, comm.size)
  if (why !== null) throw Object.assign(new Error(why), { code: 'ERR_NPB_PROCS' })
  const p = FT_CLASSES[cls]
  const L = makeLayout(p, comm.size, comm.rank)
  const u0 = new Float64Array(2 * L.ntdivnp)
  const u1 = new Float64Array(2 * L.ntdivnp)
  const u2 = new Float64Array(2 * L.ntdivnp)
  const tw = new Float64Array(L.ntdivnp)
  const chk = new Float64Array(2)
  const allchk = new Float64Array(2)
  const sums = new Float64Array(2 * p.niter)

  // The untimed pass (the reference's initialization).
  indexMap(L, tw)
  initialConditions(L, u1)
  let fft = new Fft3d(L, comm)
  await fft.run(1, u1, u0)

  if (!opts.blocking) await comm.barrier()
  else try { comm.barrierSync() } catch (err) { await completeLater(err) }
  const t0 = performance.now()
  indexMap(L, tw)
  initialConditions(L, u1)
  fft = new Fft3d(L, comm)
  await fft.run(1, u1, u0)
  const lines: string[] = []
  for (let iter = 1; iter <= p.niter; iter++) {
    evolve(u0, u1, tw, L.ntdivnp)
    await fft.run(-1, u1, u2)
    localChecksum(L, u2, chk)
    if (opts.blocking) try { comm.allreduceSync(chk, allchk, mpi.SUM) } catch (err) { await completeLater(err) }
    else await comm.reduce(chk, allchk, mpi.SUM, 0)
    if (comm.rank === 0) {
      sums[2 * (iter - 1)] = allchk[0]
      sums[2 * (iter - 1) + 1] = allchk[1]
      lines.push(` T =${String(iter).padStart(5)}     Checksum =${fortranExp(allchk[0], 22, 12, 'D', 1)}${fortranExp(allchk[1], 22, 12, 'D', 1)}`)
    }
  }
  if (opts.corrupt) sums[2 * (p.niter - 1)] *= 1 + 1e-9
  let verified = comm.rank === 0
  for (let i = 0; i < p.niter && verified; i++) {
    const [rr, ri] = p.checksums[i]
    const dr = sums[2 * i] - rr
    const di = sums[2 * i + 1] - ri
    const err = Math.hypot(dr, di) / Math.hypot(rr, ri)
    if (!(err <= EPSILON)) verified = false
  }
  const seconds = (performance.now() - t0) / 1000
  lines.push(verified ? ' Result verification successful' : ' Result verification failed')

  const ntotal = L.nx * L.ny * L.nz
  const mops = seconds > 0 ? 1e-6 * ntotal * (14.8157 + 7.19641 * Math.log(ntotal) + (5.23518 + 7.21113 * Math.log(ntotal)) * p.niter) / seconds : 0
  return { size: `${p.nx}x${p.ny}x${p.nz}`, iterations: p.niter, seconds, mops, verified, lines }
}

function checkProcs (cls: NpbClass, np: number): string | null {
  const p = FT_CLASSES[cls]
  if (p === undefined) return `FT has no class ${cls}`
  if (!Number.isInteger(np) || np < 1 || (np & (np - 1)) !== 0) return `FT needs a power of two ranks (got ${np})`
  if (np > Math.min(p.nz, p.ny)) return `FT class ${cls} runs on at most ${Math.min(p.nz, p.ny)} ranks (its 1-D layout; NPB's 2-D layout is not offered)`
  return null
}

/** NPB's FT over fastsock/mpi (see the module's comment). */
export const kernel: NpbKernel = { name: 'ft', title: 'FT Benchmark', checkProcs, run }
