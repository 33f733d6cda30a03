/**
 * NPB CG: the conjugate gradient kernel (NAS report RNR-94-007 and NPB 3.4's NPB3.4-MPI/CG).
 * The inverse power method estimates the largest eigenvalue of a random sparse symmetric
 * positive definite matrix A (order na): each of niter outer steps solves A z = x by 25
 * unpreconditioned CG iterations, then zeta = shift + 1 / (x · z) and x = z / ‖z‖.
 *
 * Decomposition and messages as NPB-MPI: the ranks (a power of two) form an nprows × npcols
 * grid (npcols = nprows or 2 × nprows); rank (row, col) holds A's block of rows × columns and
 * the vectors' slice for its columns. Per CG iteration: a sparse matrix-vector product on the
 * block; the partial products summed across the grid row by log2(npcols) pairwise sendrecv
 * steps (recursive halving when npcols = 2 × nprows); the result sent to the transpose partner
 * (a sendrecv, to itself on 2 ranks) so that each rank holds q for its columns; the dot products
 * summed across the grid row by the same pairwise steps on one double each. No collective but
 * a barrier before the timed region and the reduce of the time.
 *
 * Timed: the niter outer steps (set-up, matrix generation and one untimed warm step outside).
 * Verification: |zeta − zeta_ref| / zeta_ref ≤ 1e-10. Mop/s: 2 · niter · na · (3 + nonzer ·
 * (nonzer + 1) + 25 · (5 + nonzer · (nonzer + 1)) + 3) / seconds / 1e6.
 */
import type { Comm } from 'fastsock/mpi'
import { TIMERS_ENV, type KernelOptions, type KernelResult, type MpiModule, type NpbClass, type NpbKernel } from '../types'
import { A as MULT, randlc } from '../random'
import { CG_CLASSES, makeGrid, makeMatrix, type Csr, type Grid } from './cg/matrix'
import { fortranExp, fortranFixed } from '../format'
import { completeLater } from './cg/blocking'

const CG_ITERATIONS = 25
const EPSILON = 1e-10

/**
 * The messages of one rank, with every buffer view made once at set-up (no allocation in the
 * timed loop). `exchange` is the reference's irecv + send + wait with one partner; the awaited
 * form is comm.sendrecv, the blocking form irecv + sendSync + waitSync, falling back to the
 * awaited wait where fastsock cannot complete it synchronously (ERR_MPI_WOULD_BLOCK).
 */
class RowComm {
  /**
   * Timing the messages (FASTSOCK_NPB_TIMERS=1, from the timed region on): seconds in `sum` and in
   * `reduceTranspose`, and each sum's duration (ms), for rank 0's report.
   */
  timing = false
  readonly seconds = { sums: 0, transposes: 0 }
  readonly sumMs: number[] = []
  private readonly sbuf = new Float64Array(1)
  private readonly rbuf = new Float64Array(1)
  /** Per reduction step: w's slice sent, and the slices of q and of r received into. */
  private readonly wSend: Float64Array[] = []
  private readonly qRecv: Float64Array[] = []
  private readonly rRecv: Float64Array[] = []
  private readonly wExch: Float64Array
  private readonly qExch: Float64Array
  private readonly rExch: Float64Array

  constructor (private readonly comm: Comm, private readonly g: Grid, private readonly blocking: boolean,
    w: Float64Array, q: Float64Array, r: Float64Array) {
    for (let i = 0; i < g.l2npcols; i++) {
      this.wSend.push(w.subarray(g.reduceSendStarts[i], g.reduceSendStarts[i] + g.reduceSendLengths[i]))
      this.qRecv.push(q.subarray(g.reduceRecvStarts[i], g.reduceRecvStarts[i] + g.reduceRecvLengths[i]))
      this.rRecv.push(r.subarray(g.reduceRecvStarts[i], g.reduceRecvStarts[i] + g.reduceRecvLengths[i]))
    }
    this.wExch = w.subarray(g.sendStart, g.sendStart + g.sendLen)
    this.qExch = q.subarray(0, g.exchRecvLength)
    this.rExch = r.subarray(0, g.exchRecvLength)
  }

  private async exchange (send: Float64Array, recv: Float64Array, peer: number, tag: number): Promise<void> {
    if (!this.blocking) { await this.comm.sendrecv(send, peer, tag, recv, peer, tag); return }
    const req = this.comm.irecv(recv, peer, tag)
    try { this.comm.sendSync(send, peer, tag) } catch (err) { await completeLater(err) }
    try { req.waitSync() } catch (err) { await completeLater(err) }
  }

  /** `value` summed over the grid row (the pairwise steps). */
  async sum (value: number): Promise<number> {
    if (!this.timing) return await this.sumSteps(value)
    const t0 = performance.now()
    const s = await this.sumSteps(value)
    const ms = performance.now() - t0
    this.sumMs.push(ms)
    this.seconds.sums += ms / 1000
    return s
  }

  private async sumSteps (value: number): Promise<number> {
    let s = value
    for (let i = 0; i < this.g.l2npcols; i++) {
      this.sbuf[0] = s
      await this.exchange(this.sbuf, this.rbuf, this.g.reduceExchProc[i], i + 1)
      s += this.rbuf[0]
    }
    return s
  }

  /** Two values summed over the grid row at once (the norms after conj_grad), in place. */
  async sum2 (pair: Float64Array, scratch: Float64Array): Promise<void> {
    for (let i = 0; i < this.g.l2npcols; i++) {
      await this.exchange(pair, scratch, this.g.reduceExchProc[i], i + 1)
      pair[0] += scratch[0]
      pair[1] += scratch[1]
    }
  }

  /**
   * w's rows summed across the grid row, then transposed: on return `into` (q or r) holds
   * A·v for this rank's columns. Uses `into` as the receive buffer of the reduction too, as NPB.
   */
  async reduceTranspose (w: Float64Array, into: Float64Array, intoIsQ: boolean): Promise<void> {
    if (!this.timing) return await this.reduceTransposeSteps(w, into, intoIsQ)
    const t0 = performance.now()
    await this.reduceTransposeSteps(w, into, intoIsQ)
    this.seconds.transposes += (performance.now() - t0) / 1000
  }

  private async reduceTransposeSteps (w: Float64Array, into: Float64Array, intoIsQ: boolean): Promise<void> {
    const g = this.g
    const recvs = intoIsQ ? this.qRecv : this.rRecv
    for (let i = g.l2npcols - 1; i >= 0; i--) {
      await this.exchange(this.wSend[i], recvs[i], g.reduceExchProc[i], i + 1)
      addInto(w, into, g.sendStart, g.sendStart + g.reduceRecvLengths[i])
    }
    if (g.l2npcols !== 0) await this.exchange(this.wExch, intoIsQ ? this.qExch : this.rExch, g.exchProc, 1)
    else into.set(w.subarray(0, g.exchRecvLength))
  }
}

/** w[j] += v[j] for j in [from, to). */
function addInto (w: Float64Array, v: Float64Array, from: number, to: number): void {
  for (let j = from; j < to; j++) w[j] += v[j]
}

/**
 * w[0..nrows) = A · p on this rank's block (CSR, 0-based local columns). Twelve products per
 * trip, added left to right: the reference's summation order, so the same result to the bit.
 * V8 spends most of this loop on its own work per trip (bounds checks, the arrays' data pointers
 * and lengths, spilled indices), so a longer trip amortizes it: twelve products per trip ran
 * 1.1 to 1.15× faster than four and four 1.2 to 1.4× faster than one (class A's matrix, one
 * process, interleaved). The `| 0` on each index tells V8 the sum is a 32-bit integer (k + 11
 * stays below 2^31: k indexes an Int32Array), so it emits no overflow check for it.
 */
function spmv (rowstr: Int32Array, colidx: Int32Array, a: Float64Array, p: Float64Array, w: Float64Array, nrows: number): void {
  let k = rowstr[0]
  for (let j = 0; j < nrows; j++) {
    const end = rowstr[j + 1]
    let sum = 0
    for (; ((k + 11) | 0) < end; k = (k + 12) | 0) {
      sum = sum + a[k] * p[colidx[k]] + a[(k + 1) | 0] * p[colidx[(k + 1) | 0]] + a[(k + 2) | 0] * p[colidx[(k + 2) | 0]] +
        a[(k + 3) | 0] * p[colidx[(k + 3) | 0]] + a[(k + 4) | 0] * p[colidx[(k + 4) | 0]] + a[(k + 5) | 0] * p[colidx[(k + 5) | 0]] +
        a[(k + 6) | 0] * p[colidx[(k + 6) | 0]] + a[(k + 7) | 0] * p[colidx[(k + 7) | 0]] + a[(k + 8) | 0] * p[colidx[(k + 8) | 0]] +
        a[(k + 9) | 0] * p[colidx[(k + 9) | 0]] + a[(k + 10) | 0] * p[colidx[(k + 10) | 0]] + a[(k + 11) | 0] * p[colidx[(k + 11) | 0]]
    }
    for (; k < end; k++) sum += a[k] * p[colidx[k]]
    w[j] = sum
  }
}

/** x · y over [0, n). */
function dot (x: Float64Array, y: Float64Array, n: number): number {
  let s = 0
  for (let j = 0; j < n; j++) s += x[j] * y[j]
  return s
}

/** z += alpha p; r -= alpha q; returns r · r, over [0, n). */
function updateZR (z: Float64Array, r: Float64Array, p: Float64Array, q: Float64Array, alpha: number, n: number): number {
  let s = 0
  for (let j = 0; j < n; j++) {
    z[j] += alpha * p[j]
    const rj = r[j] - alpha * q[j]
    r[j] = rj
    s += rj * rj
  }
  return s
}

/** p = r + beta p over [0, n). */
function updateP (p: Float64Array, r: Float64Array, beta: number, n: number): void {
  for (let j = 0; j < n; j++) p[j] = r[j] + beta * p[j]
}

/** Σ (x − r)² over [0, n). */
function distance2 (x: Float64Array, r: Float64Array, n: number): number {
  let s = 0
  for (let j = 0; j < n; j++) { const d = x[j] - r[j]; s += d * d }
  return s
}

/** The vectors of one rank, each naa long (its column slice; w and q also hold row slices). */
interface Vectors { x: Float64Array, z: Float64Array, p: Float64Array, q: Float64Array, r: Float64Array, w: Float64Array }

/** NPB's conj_grad: 25 CG iterations on A z = x from z = 0; returns ‖x − A z‖ (the residual, meaningful on every rank). */
async function conjGrad (m: Csr, g: Grid, v: Vectors, rc: RowComm): Promise<number> {
  const { x, z, p, q, r, w } = v
  const nrows = g.lastrow - g.firstrow + 1
  const ncols = g.lastcol - g.firstcol + 1
  const { rowstr, colidx, a } = m
  q.fill(0); z.fill(0); w.fill(0)
  r.set(x); p.set(x)
  let rho = await rc.sum(dot(r, r, ncols))
  for (let cgit = 0; cgit < CG_ITERATIONS; cgit++) {
    spmv(rowstr, colidx, a, p, w, nrows)
    await rc.reduceTranspose(w, q, true)
    w.fill(0, 0, Math.max(nrows, ncols))
    const d = await rc.sum(dot(p, q, ncols))
    const alpha = rho / d
    const rho0 = rho
    rho = await rc.sum(updateZR(z, r, p, q, alpha, ncols))
    updateP(p, r, rho / rho0, ncols)
  }
  spmv(rowstr, colidx, a, z, w, nrows)
  await rc.reduceTranspose(w, r, false)
  return Math.sqrt(await rc.sum(distance2(x, r, ncols)))
}

/** One outer step after conj_grad: x · z and z · z summed over the row; x = z / ‖z‖; returns x · z. */
async function normalize (v: Vectors, ncols: number, rc: RowComm, pair: Float64Array, scratch: Float64Array): Promise<number> {
  pair[0] = dot(v.x, v.z, ncols)
  pair[1] = dot(v.z, v.z, ncols)
  await rc.sum2(pair, scratch)
  const inv = 1 / Math.sqrt(pair[1])
  const { x, z } = v
  for (let j = 0; j < ncols; j++) x[j] = inv * z[j]
  return pair[0]
}

async function run (mpi: MpiModule, comm: Comm, cls: NpbClass, opts: KernelOptions): Promise<KernelResult> {
  const why = checkProcs(cls, comm.size)
  if (why !== null) throw Object.assign(new Error(why), { code: 'ERR_NPB_PROCS' })
  const p = CG_CLASSES[cls]
  const g = makeGrid(p.na, comm.size, comm.rank)
  const tran = new Float64Array([314159265])
  randlc(tran, MULT)
  const m = makeMatrix(p, g, tran)
  const vec = (): Float64Array => new Float64Array(g.naa)
  const v: Vectors = { x: vec(), z: vec(), p: vec(), q: vec(), r: vec(), w: vec() }
  const rc = new RowComm(comm, g, opts.blocking, v.w, v.q, v.r)
  const ncols = g.lastcol - g.firstcol + 1
  const pair = new Float64Array(2)
  const scratch = new Float64Array(2)

  // One untimed step: the code and the connections warmed as in the reference.
  v.x.fill(1)
  await conjGrad(m, g, v, rc)
  await normalize(v, ncols, rc, pair, scratch)
  v.x.fill(1)

  const lines = ['', '   iteration           ||r||                 zeta']
  let zeta = 0
  if (!opts.blocking) await comm.barrier()
  else try { comm.barrierSync() } catch (err) { await completeLater(err) }
  rc.timing = process.env[TIMERS_ENV] === '1'
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  for (let it = 1; it <= p.niter; it++) {
    const rnorm = await conjGrad(m, g, v, rc)
    const xz = await normalize(v, ncols, rc, pair, scratch)
    zeta = p.shift + 1 / xz
    if (comm.rank === 0) lines.push(`    ${String(it).padStart(5)}      ${fortranExp(rnorm, 21, 14)}${fortranFixed(zeta, 20, 13)}`)
  }
  const t = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  const tmax = new Float64Array(1)
  await comm.reduce(new Float64Array([t]), tmax, mpi.MAX, 0)

  if (opts.corrupt) zeta *= 1 + 1e-6
  const err = Math.abs(zeta - p.zeta) / p.zeta
  const verified = err <= EPSILON
  lines.push(' Benchmark completed ')
  if (verified) lines.push(' VERIFICATION SUCCESSFUL ', ` Zeta is    ${fortranExp(zeta, 20, 13)}`, ` Error is   ${fortranExp(err, 20, 13)}`)
  else lines.push(' VERIFICATION FAILED', ` Zeta                ${fortranExp(zeta, 20, 13)}`, ` The correct zeta is ${fortranExp(p.zeta, 20, 13)}`)
  if (rc.timing) lines.push(...timersReport(rc, t, cpu))
  const seconds = tmax[0]
  const nz = p.nonzer * (p.nonzer + 1)
  const mops = seconds > 0 ? 1e-6 * 2 * p.niter * p.na * (3 + nz + 25 * (5 + nz) + 3) / seconds : 0
  return { size: String(p.na), iterations: p.niter, seconds, mops, verified, lines }
}

/**
 * Rank 0's split of its own timed region (FASTSOCK_NPB_TIMERS=1; NPB's timer.flag report,
 * shortened): the row sums (one double per step, the waits for the partner included), the
 * reductions and transposes of A·p, the rest (the sparse products and vector updates), the CPU
 * time; then the sums' percentiles and how much of their time went to sums over 1 ms (the
 * stalls docs/npb.md explains).
 */
function timersReport (rc: RowComm, mine: number, cpu: NodeJS.CpuUsage): string[] {
  const { sums, transposes } = rc.seconds
  const ms = [...rc.sumMs].sort((a, b) => a - b)
  const at = (f: number): string => ms.length === 0 ? '-' : (ms[Math.floor(f * (ms.length - 1))] * 1000).toFixed(0)
  const slow = ms.filter(x => x > 1)
  return [
    ` Rank 0: row sums ${sums.toFixed(3)} s, reductions and transposes ${transposes.toFixed(3)} s, the rest (compute) ${(mine - sums - transposes).toFixed(3)} s of ${mine.toFixed(3)} s; CPU time ${((cpu.user + cpu.system) / 1e6).toFixed(3)} s`,
    ` Rank 0: ${ms.length} row sums, µs p50 ${at(0.5)} p90 ${at(0.9)} p99 ${at(0.99)} max ${at(1)}; ${slow.length} over 1 ms took ${slow.reduce((a, b) => a + b, 0).toFixed(1)} ms`
  ]
}

function checkProcs (cls: NpbClass, np: number): string | null {
  if (!(cls in CG_CLASSES)) return `CG has no class ${cls}`
  if (!Number.isInteger(np) || np < 1 || (np & (np - 1)) !== 0) return `CG needs a power of two ranks (got ${np})`
  const { nprows, npcols } = makeGrid(CG_CLASSES[cls].na, np, 0)
  if (nprows > CG_CLASSES[cls].na || npcols > CG_CLASSES[cls].na) return `CG class ${cls} has too few rows for ${np} ranks`
  return null
}

/** NPB's CG over fastsock/mpi (see the module's comment). */
export const kernel: NpbKernel = { name: 'cg', title: 'CG Benchmark', checkProcs, run }
