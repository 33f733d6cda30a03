/**
 * NPB MG: a V-cycle multigrid solving the 3-D Poisson problem  del^2 u = v  on an n^3 periodic
 * grid, v holding +1 at the ten largest and -1 at the ten smallest of n^3 pseudo-random numbers.
 * The algorithm, decomposition and messages are those of the reference MPI implementation
 * (NPB 3.4, NPB3.4-MPI/MG/mg.f; NAS reports RNR-91-002 and NAS-95-020):
 *
 * - P = 2^p ranks form a pi1 x pi2 x pi3 grid (pi1 = 2^floor(p/3), pi2 = 2^floor((p - p1)/2),
 *   pi3 = the rest: P = 2 splits the third axis, P = 4 the second and third); every level keeps
 *   the same split, each rank holding its block of the level plus one ghost layer per face.
 * - comm3 (after each operator that writes a level): per axis in turn, two receives posted from
 *   the axis neighbours, the two boundary planes sent, the ghost planes filled from what arrived
 *   (a rank that is its own neighbour in an axis sends to itself, as the reference does); on one
 *   rank, the periodic copy without messages (the reference's comm1p). The same messages as the
 *   reference's, moved differently: the third axis' planes are contiguous, so they go from the
 *   grid and into it in place (typed-array views) where the reference packs them, and the other
 *   two axes' planes are packed and unpacked two at a time (Halo, packPlanes).
 * - norm2u3: two one-double allreduces (MAX of |r|, SUM of r^2); zran3 picks the global ten
 *   extremes with four allreduces per place (value MAX/MIN, position MAX).
 * - The timed region: a residual and its norm, `nit` V-cycles each followed by a residual, the
 *   final norm; the time reported is the maximum over ranks (MPI_Reduce MAX to rank 0).
 *   Mop/s = 58 nit n^3 / t / 1e6; verification: the final L2 norm within 1e-8 (relative) of the
 *   class' value.
 *
 * Each level is one Float64Array, point (i1, i2, i3) at i1 + n1 * (i2 + n2 * i3) (see
 * ./mg/stencils.ts). Ranks beyond 8 would leave coarse levels with a single point or none per
 * rank in some axis (the reference's "dead" levels and comm3_ex): not implemented; checkProcs
 * says so.
 */
import type { Comm, Request } from 'fastsock/mpi'
import { TIMERS_ENV, type KernelOptions, type KernelResult, type MpiModule, type NpbClass, type NpbKernel } from '../types'
import { A as MULT, power46, randlc, vranlc } from '../random'
import { interp, localNorms, psinv, resid, rprj3 } from './mg/stencils'
import { fortranExp } from '../format'

/** Fortran's E20.13, as mg.f prints the L2 norm and its error. */
const fortranE = (x: number): string => fortranExp(x, 20, 13)

/** Problem per class (NPB 3.4 setparams and mg.f): grid edge, V-cycles, reference L2 norm. */
const CLASSES: Record<NpbClass, { n: number, nit: number, norm: number }> = {
  S: { n: 32, nit: 4, norm: 0.5307707005734e-04 },
  W: { n: 128, nit: 4, norm: 0.6467329375339e-05 },
  A: { n: 256, nit: 4, norm: 0.2433365309069e-05 },
  B: { n: 256, nit: 20, norm: 0.1800564401355e-05 },
  C: { n: 512, nit: 20, norm: 0.5706732285740e-06 }
}

/** NPB's verification tolerance (relative error of the L2 norm). */
const EPSILON = 1e-8

/** The residual operator A's coefficients (a1 = 0 is assumed by resid). */
const A_COEF = [-8 / 3, 0, 1 / 6, 1 / 12]
/** The smoother's coefficients: S(a) for classes S, W, A; S(b) for B and larger (c3 = 0 assumed by psinv). */
const C_SA = [-3 / 8, 1 / 32, -1 / 64, 0]
const C_SB = [-3 / 17, 1 / 33, -1 / 61, 0]


/** The ten extremes zran3 marks with charges. */
const CHARGES = 10

/** Most ranks supported: at 16 and more a coarse level has fewer than two points per rank in some axis. */
const MAX_PROCS = 8

/** One level of the hierarchy on this rank: local extents with ghosts, and its halo buffers. */
interface Level {
  n1: number
  n2: number
  n3: number
  u: Float64Array
  r: Float64Array
  /**
   * The halo buffers of the first two axes (index = axis), each [sent to -1 (low boundary), sent
   * to +1 (high boundary), received from +1 (for the high ghost plane), received from -1 (for the
   * low one)]; the third axis' planes move in place (Halo).
   */
  halo: Float64Array[][]
}

/** The rank's place in the process grid and its share of the finest grid. */
interface Layout {
  /** Ranks per axis. */
  pi: number[]
  /** This rank's coordinates in the process grid. */
  idi: number[]
  /** Neighbour rank per axis and direction, index 2 * axis + (dir > 0 ? 1 : 0) (the same at every level up to 8 ranks). */
  nbr: number[]
  /** First global interior index of this rank's block on the finest level, per axis (1-based as NPB: the global grid starts at 2). */
  is: number[]
  /** Last one. */
  ie: number[]
}

/** MPI tag of the messages sent along `axis` (0..2) toward `dir` (-1, +1): NPB's msg_type. */
function tagOf (axis: number, dir: number): number {
  return 100 * (dir + 2 + 10 * (axis + 1))
}

function slot (axis: number, dir: number): number {
  return 2 * axis + (dir > 0 ? 1 : 0)
}

function layoutOf (rank: number, np: number, n: number): Layout {
  const logp = Math.round(Math.log2(np))
  const dx = Math.floor(logp / 3)
  const dy = Math.floor((logp - dx) / 2)
  const pi = [2 ** dx, 2 ** dy, 0]
  pi[2] = np / (pi[0] * pi[1])
  const idi = [rank % pi[0], Math.floor(rank / pi[0]) % pi[1], Math.floor(rank / (pi[0] * pi[1]))]
  const nbr: number[] = []
  for (let axis = 0; axis < 3; axis++) {
    for (const dir of [-1, 1]) {
      const c = idi.slice()
      c[axis] = (idi[axis] + dir + pi[axis]) % pi[axis]
      nbr[slot(axis, dir)] = c[0] + pi[0] * (c[1] + pi[1] * c[2])
    }
  }
  const is = [0, 0, 0]
  const ie = [0, 0, 0]
  for (let ax = 0; ax < 3; ax++) {
    is[ax] = 2 + n - Math.floor(((pi[ax] - idi[ax]) * n) / pi[ax])
    ie[ax] = 1 + n - Math.floor(((pi[ax] - 1 - idi[ax]) * n) / pi[ax])
  }
  return { pi, idi, nbr, is, ie }
}

function makeLevel (lay: Layout, ng: number): Level {
  const m = [0, 0, 0]
  for (let ax = 0; ax < 3; ax++) {
    m[ax] = 2 + Math.floor(((lay.idi[ax] + 1) * ng) / lay.pi[ax]) - Math.floor((lay.idi[ax] * ng) / lay.pi[ax])
  }
  const [n1, n2, n3] = m
  const planes = [(n2 - 2) * (n3 - 2), n1 * (n3 - 2)]
  const halo = planes.map(n => [new Float64Array(n), new Float64Array(n), new Float64Array(n), new Float64Array(n)])
  const size = n1 * n2 * n3
  return { n1, n2, n3, u: new Float64Array(size), r: new Float64Array(size), halo }
}

// ---- the halo exchange (comm3) ---------------------------------------------------------------

/**
 * Copies the boundary planes of `axis` 0 or 1 of grid `g` (the planes at index 1 and last - 1)
 * into `lo` and `hi` in one pass (axis 0: interior i2, i3; axis 1: all i1, interior i3). One
 * pass for both: on axis 0 each element is a row apart (2 KB at class A's finest level, past
 * what the hardware prefetcher follows), and the two planes' elements of a row are then fetched
 * together, two misses in flight instead of one.
 */
function packPlanes (g: Float64Array, n1: number, n2: number, n3: number, axis: number, lo: Float64Array, hi: Float64Array): void {
  const n12 = n1 * n2
  let k = 0
  if (axis === 0) {
    for (let i3 = 1; i3 < n3 - 1; i3++) {
      for (let row = n1 + i3 * n12, end = row + (n2 - 2) * n1; row < end; row += n1) {
        lo[k] = g[row + 1]
        hi[k] = g[row + n1 - 2]
        k++
      }
    }
  } else {
    const hiPlane = (n2 - 2) * n1
    for (let i3 = 1; i3 < n3 - 1; i3++) {
      const row = n1 + i3 * n12
      for (let i1 = 0; i1 < n1; i1++) {
        lo[k] = g[row + i1]
        hi[k] = g[row + hiPlane - n1 + i1]
        k++
      }
    }
  }
}

/** The inverse for the ghost planes (index 0 from `lo`, last from `hi`), one pass: see packPlanes. */
function unpackPlanes (g: Float64Array, n1: number, n2: number, n3: number, axis: number, lo: Float64Array, hi: Float64Array): void {
  const n12 = n1 * n2
  let k = 0
  if (axis === 0) {
    for (let i3 = 1; i3 < n3 - 1; i3++) {
      for (let row = n1 + i3 * n12, end = row + (n2 - 2) * n1; row < end; row += n1) {
        g[row] = lo[k]
        g[row + n1 - 1] = hi[k]
        k++
      }
    }
  } else {
    const hiPlane = (n2 - 1) * n1
    for (let i3 = 1; i3 < n3 - 1; i3++) {
      const base = i3 * n12
      for (let i1 = 0; i1 < n1; i1++) {
        g[base + i1] = lo[k]
        g[base + hiPlane + i1] = hi[k]
        k++
      }
    }
  }
}

/**
 * comm1p on one rank: each ghost plane takes the opposite interior boundary plane, axis by axis
 * (the second axis' planes include the first axis' ghosts, the third's all of them, so edges
 * and corners come out periodic too). Rows and planes that are contiguous move with copyWithin.
 */
function periodic (g: Float64Array, n1: number, n2: number, n3: number): void {
  const n12 = n1 * n2
  for (let i3 = 1; i3 < n3 - 1; i3++) {
    for (let i2 = 1; i2 < n2 - 1; i2++) {
      const row = i2 * n1 + i3 * n12
      g[row] = g[row + n1 - 2]
      g[row + n1 - 1] = g[row + 1]
    }
  }
  for (let i3 = 1; i3 < n3 - 1; i3++) {
    const plane = i3 * n12
    g.copyWithin(plane, plane + (n2 - 2) * n1, plane + (n2 - 1) * n1)
    g.copyWithin(plane + (n2 - 1) * n1, plane + n1, plane + 2 * n1)
  }
  g.copyWithin(0, (n3 - 2) * n12, (n3 - 1) * n12)
  g.copyWithin((n3 - 1) * n12, n12, 2 * n12)
}

/**
 * comm3: refreshes the ghost layer of a level's grid, axis by axis. With one rank, the periodic
 * copies without messages; otherwise, per axis: irecv from both neighbours, send both boundary
 * planes, wait, fill both ghost planes. The third axis' planes are contiguous in the grid: they
 * are sent from it and received into it in place (views made once per grid array), where the
 * reference packs them into buffers; the first two axes' planes are packed and unpacked, both
 * planes of an axis in one pass (packPlanes).
 */
class Halo {
  private readonly reqs: Request[] = []
  /** Per grid array: its third axis' [low boundary, high boundary, low ghost, high ghost] planes. */
  private readonly zViews = new WeakMap<Float64Array, Float64Array[]>()

  constructor (
    private readonly mpi: MpiModule,
    private readonly comm: Comm,
    private readonly lay: Layout,
    private readonly blocking: boolean
  ) {}

  async exchange (L: Level, g: Float64Array): Promise<void> {
    const { n1, n2, n3 } = L
    if (this.comm.size === 1) {
      periodic(g, n1, n2, n3)
      return
    }
    for (let axis = 0; axis < 3; axis++) {
      if (this.blocking) await this.axisBlocking(L, g, axis)
      else await this.axisAwaited(L, g, axis)
    }
  }

  /**
   * The axis' four planes for `g`, in Level.halo's order: the first two axes' are the level's
   * buffers, the third's views of `g` (made once per grid array).
   */
  private planes (L: Level, g: Float64Array, axis: number): Float64Array[] {
    if (axis < 2) return L.halo[axis]
    let v = this.zViews.get(g)
    if (v === undefined) {
      const n12 = L.n1 * L.n2
      const last = L.n3 - 1
      v = [g.subarray(n12, 2 * n12), g.subarray((last - 1) * n12, last * n12), g.subarray(last * n12, (last + 1) * n12), g.subarray(0, n12)]
      this.zViews.set(g, v)
    }
    return v
  }

  /** Posts both receives (what arrives from the +1 side was sent toward -1, and vice versa) and packs the boundary planes. */
  private start (L: Level, g: Float64Array, axis: number, p: Float64Array[]): void {
    const { comm, lay, reqs } = this
    reqs[0] = comm.irecv(p[2], lay.nbr[slot(axis, 1)], tagOf(axis, -1))
    reqs[1] = comm.irecv(p[3], lay.nbr[slot(axis, -1)], tagOf(axis, 1))
    if (axis < 2) packPlanes(g, L.n1, L.n2, L.n3, axis, p[0], p[1])
  }

  private async axisAwaited (L: Level, g: Float64Array, axis: number): Promise<void> {
    const { comm, lay, reqs } = this
    const p = this.planes(L, g, axis)
    this.start(L, g, axis, p)
    reqs[2] = comm.isend(p[1], lay.nbr[slot(axis, 1)], tagOf(axis, 1))
    reqs[3] = comm.isend(p[0], lay.nbr[slot(axis, -1)], tagOf(axis, -1))
    await this.mpi.waitAll(reqs)
    if (axis < 2) unpackPlanes(g, L.n1, L.n2, L.n3, axis, p[3], p[2])
  }

  private async axisBlocking (L: Level, g: Float64Array, axis: number): Promise<void> {
    const { comm, lay, reqs } = this
    const p = this.planes(L, g, axis)
    this.start(L, g, axis, p)
    await blockingOr(() => { comm.sendSync(p[1], lay.nbr[slot(axis, 1)], tagOf(axis, 1)) })
    await blockingOr(() => { comm.sendSync(p[0], lay.nbr[slot(axis, -1)], tagOf(axis, -1)) })
    await blockingOr(() => { reqs[0].waitSync() })
    await blockingOr(() => { reqs[1].waitSync() })
    if (axis < 2) unpackPlanes(g, L.n1, L.n2, L.n3, axis, p[3], p[2])
  }
}

/**
 * Runs a blocking call; when it cannot complete without the event loop (ERR_MPI_WOULD_BLOCK: a
 * connection still being set up, a transport other than shm), awaits the operation it started.
 * Resolves synchronously-completed calls without a promise.
 */
function blockingOr (fn: () => void): Promise<void> | undefined {
  try {
    fn()
    return undefined
  } catch (err) {
    const e = err as { code?: string, request?: { wait: () => Promise<unknown> } }
    if (e.code === 'ERR_MPI_WOULD_BLOCK' && e.request !== undefined) return e.request.wait().then(() => undefined)
    throw err
  }
}

// ---- the solver ----------------------------------------------------------------------------

class Mg {
  readonly levels: Level[] = [] // index k = 1 .. lt (0 unused), lt the finest
  readonly lt: number
  readonly v: Float64Array
  private readonly halo: Halo
  private readonly norms = new Float64Array(2)
  private readonly red = new Float64Array(1)
  private readonly redOut = new Float64Array(1)
  private readonly c: number[]

  constructor (
    private readonly mpi: MpiModule,
    private readonly comm: Comm,
    readonly n: number,
    cls: NpbClass,
    readonly lay: Layout,
    private readonly blocking: boolean
  ) {
    this.lt = Math.round(Math.log2(n))
    for (let k = 1; k <= this.lt; k++) this.levels[k] = makeLevel(lay, n >> (this.lt - k))
    const top = this.levels[this.lt]
    this.v = new Float64Array(top.n1 * top.n2 * top.n3)
    this.halo = new Halo(mpi, comm, lay, blocking)
    this.c = cls === 'S' || cls === 'W' || cls === 'A' ? C_SA : C_SB
  }

  /** Seconds spent in comm3 (messages and waits) and in norm2u3's allreduces, when timing (NPB's t_comm3, t_rcomm). */
  readonly commSeconds = new Float64Array(2)
  timing = false

  private async comm3 (L: Level, g: Float64Array): Promise<void> {
    if (!this.timing) return await this.halo.exchange(L, g)
    const t0 = performance.now()
    await this.halo.exchange(L, g)
    this.commSeconds[0] += (performance.now() - t0) / 1000
  }

  private async allreduce1 (x: number, op: MpiModule['MAX']): Promise<number> {
    this.red[0] = x
    if (this.blocking) await blockingOr(() => { this.comm.allreduceSync(this.red, this.redOut, op) })
    else await this.comm.allreduce(this.red, this.redOut, op)
    return this.redOut[0]
  }

  /** resid on level k (k = lt: r = v - A u; below: r = r - A u in place), then comm3 of r. */
  async resid (k: number): Promise<void> {
    const L = this.levels[k]
    resid(L.u, k === this.lt ? this.v : L.r, L.r, L.n1, L.n2, L.n3, A_COEF[0], A_COEF[2], A_COEF[3])
    await this.comm3(L, L.r)
  }

  async psinv (k: number): Promise<void> {
    const L = this.levels[k]
    psinv(L.r, L.u, L.n1, L.n2, L.n3, this.c[0], this.c[1], this.c[2])
    await this.comm3(L, L.u)
  }

  /** norm2u3 of the finest r (or v): [L2 norm, max norm] over the whole grid. */
  async norm2u3 (g: Float64Array): Promise<[number, number]> {
    const L = this.levels[this.lt]
    localNorms(g, L.n1, L.n2, L.n3, this.norms)
    const s = this.norms[0]
    const t0 = performance.now()
    const rnmu = await this.allreduce1(this.norms[1], this.mpi.MAX)
    const sum = await this.allreduce1(s, this.mpi.SUM)
    if (this.timing) this.commSeconds[1] += (performance.now() - t0) / 1000
    return [Math.sqrt(sum / (this.n * this.n * this.n)), rnmu]
  }

  /** One V-cycle (mg3P): restrict the residual down to level 1, smooth there, then up: interpolate, residual, smooth. */
  async vcycle (): Promise<void> {
    const lv = this.levels
    for (let k = this.lt; k >= 2; k--) {
      const F = lv[k]
      const C = lv[k - 1]
      rprj3(F.r, F.n1, F.n2, C.r, C.n1, C.n2, C.n3)
      await this.comm3(C, C.r)
    }
    lv[1].u.fill(0)
    await this.psinv(1)
    for (let k = 2; k <= this.lt; k++) {
      const F = lv[k]
      const C = lv[k - 1]
      if (k < this.lt) F.u.fill(0)
      interp(C.u, C.n1, C.n2, C.n3, F.u, F.n1, F.n2)
      await this.resid(k)
      await this.psinv(k)
    }
  }

  /** zran3: v = 0 except +1 at the grid's ten largest and -1 at its ten smallest random numbers (NPB's generator, seed 314159265), then comm3. */
  async zran3 (): Promise<void> {
    const { lay, n } = this
    const top = this.levels[this.lt]
    const { n1, n2, n3 } = top
    const z = this.v
    z.fill(0)
    const a1 = power46(MULT, n)
    const a2 = power46(MULT, n * n)
    const ai = power46(MULT, n * (lay.is[1] - 2 + n * (lay.is[2] - 2)) + lay.is[0] - 2)
    const d1 = lay.ie[0] - lay.is[0] + 1
    const e2 = lay.ie[1] - lay.is[1] + 2
    const e3 = lay.ie[2] - lay.is[2] + 2
    const x0 = new Float64Array([314159265])
    const x1 = new Float64Array(1)
    const xx = new Float64Array(1)
    randlc(x0, ai)
    for (let i3 = 1; i3 < e3; i3++) {
      x1[0] = x0[0]
      for (let i2 = 1; i2 < e2; i2++) {
        xx[0] = x1[0]
        vranlc(d1, xx, MULT, z, 1 + n1 * (i2 + n2 * i3))
        randlc(x1, a1)
      }
      randlc(x0, a2)
    }

    // This rank's ten largest (ascending: hiVal[0] the smallest kept) and ten smallest (descending).
    const hiVal = new Float64Array(CHARGES)
    const hiAt = new Int32Array(CHARGES)
    const loVal = new Float64Array(CHARGES).fill(1)
    const loAt = new Int32Array(CHARGES)
    scanExtremes(z, n1, n2, n3, hiVal, hiAt, loVal, loAt)

    // The global ten: one place at a time, the best candidate of all ranks; the rank holding it
    // moves on to its next candidate. Positions are reduced too (NPB reports them when debugging).
    const { comm } = this
    const pos = new Int32Array(4)
    const posOut = new Int32Array(4)
    const globalPos = async (at: number, won: boolean): Promise<void> => {
      if (won) {
        const i1 = at % n1
        const i2 = Math.floor(at / n1) % n2
        const i3 = Math.floor(at / (n1 * n2))
        pos[0] = comm.rank; pos[1] = lay.is[0] - 1 + i1; pos[2] = lay.is[1] - 1 + i2; pos[3] = lay.is[2] - 1 + i3
      } else {
        pos.fill(0)
      }
      if (this.blocking) await blockingOr(() => { comm.allreduceSync(pos, posOut, this.mpi.MAX) })
      else await comm.allreduce(pos, posOut, this.mpi.MAX)
    }
    let ih = CHARGES - 1
    let il = CHARGES - 1
    for (let i = CHARGES - 1; i >= 0; i--) {
      const mine = ih >= 0 ? z[hiAt[ih]] : -Infinity
      const best = await this.allreduce1(mine, this.mpi.MAX)
      const wonHi = best === mine
      await globalPos(hiAt[Math.max(ih, 0)], wonHi)
      if (wonHi) ih--
      const mineLo = il >= 0 ? z[loAt[il]] : Infinity
      const bestLo = await this.allreduce1(mineLo, this.mpi.MIN)
      const wonLo = bestLo === mineLo
      await globalPos(loAt[Math.max(il, 0)], wonLo)
      if (wonLo) il--
    }
    z.fill(0)
    for (let i = CHARGES - 1; i > il; i--) z[loAt[i]] = -1
    for (let i = CHARGES - 1; i > ih; i--) z[hiAt[i]] = 1
    await this.comm3(top, z)
  }
}

/**
 * This rank's ten largest interior values of z (hiVal ascending, hiAt their indices) and ten
 * smallest (loVal descending), as zran3 collects its candidates (a hot loop kept out of the
 * async zran3, as the stencils are).
 */
function scanExtremes (z: Float64Array, n1: number, n2: number, n3: number,
  hiVal: Float64Array, hiAt: Int32Array, loVal: Float64Array, loAt: Int32Array): void {
  const n12 = n1 * n2
  for (let i3 = 1; i3 < n3 - 1; i3++) {
    for (let i2 = 1; i2 < n2 - 1; i2++) {
      const row = i2 * n1 + i3 * n12
      for (let i1 = 1; i1 < n1 - 1; i1++) {
        const x = z[row + i1]
        if (x > hiVal[0]) { hiVal[0] = x; hiAt[0] = row + i1; siftUp(hiVal, hiAt, 1) }
        if (x < loVal[0]) { loVal[0] = x; loAt[0] = row + i1; siftUp(loVal, loAt, -1) }
      }
    }
  }
}

/** Restores the order of a ten-candidate list after its first entry changed (dir 1: ascending, -1: descending). */
function siftUp (val: Float64Array, at: Int32Array, dir: number): void {
  for (let i = 0; i < val.length - 1; i++) {
    if (dir * (val[i] - val[i + 1]) <= 0) return
    const t = val[i]; val[i] = val[i + 1]; val[i + 1] = t
    const p = at[i]; at[i] = at[i + 1]; at[i + 1] = p
  }
}

async function run (mpi: MpiModule, comm: Comm, cls: NpbClass, opts: KernelOptions): Promise<KernelResult> {
  const why = checkProcs(cls, comm.size)
  if (why !== null) throw Object.assign(new RangeError(why), { code: 'ERR_INVALID_ARG_VALUE' })
  const spec = CLASSES[cls]
  const { n, nit } = spec
  const mg = new Mg(mpi, comm, n, cls, layoutOf(comm.rank, comm.size, n), opts.blocking)
  const top = mg.levels[mg.lt]
  const barrier = async (): Promise<void> => {
    if (opts.blocking) await blockingOr(() => { comm.barrierSync() })
    else await comm.barrier()
  }

  // Set-up, untimed as in the reference: the data, one V-cycle to warm everything up, the data again.
  await barrier()
  top.u.fill(0)
  await mg.zran3()
  await mg.norm2u3(mg.v)
  await mg.resid(mg.lt)
  await mg.norm2u3(top.r)
  await mg.vcycle()
  await mg.resid(mg.lt)
  top.u.fill(0)
  await mg.zran3()
  await barrier()

  mg.timing = process.env[TIMERS_ENV] === '1'
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await mg.resid(mg.lt)
  await mg.norm2u3(top.r)
  for (let it = 1; it <= nit; it++) {
    await mg.vcycle()
    await mg.resid(mg.lt)
  }
  let [rnm2] = await mg.norm2u3(top.r)
  const mine = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)

  const tIn = new Float64Array([mine])
  const tOut = new Float64Array(1)
  await comm.reduce(tIn, tOut, mpi.MAX, 0)
  const seconds = comm.rank === 0 ? tOut[0] : mine

  if (opts.corrupt) rnm2 *= 1 + 1e-6
  const err = Math.abs(rnm2 - spec.norm) / spec.norm
  const verified = !Number.isNaN(err) && err <= EPSILON
  const lines = verified
    ? [' VERIFICATION SUCCESSFUL ', ' L2 Norm is ' + fortranE(rnm2), ' Error is   ' + fortranE(err)]
    : [' VERIFICATION FAILED', ' L2 Norm is             ' + fortranE(rnm2), ' The correct L2 Norm is ' + fortranE(spec.norm)]
  if (mg.timing) {
    // Rank 0's split of its own timed region (NPB's timer.flag report, shortened).
    const [halo, norms] = mg.commSeconds
    lines.push(` Rank 0: comm3 ${halo.toFixed(3)} s, norm allreduces ${norms.toFixed(3)} s, the rest (compute) ${(mine - halo - norms).toFixed(3)} s of ${mine.toFixed(3)} s; CPU time ${((cpu.user + cpu.system) / 1e6).toFixed(3)} s`)
  }
  const mops = seconds > 0 ? 58e-6 * nit * n * n * n / seconds : 0
  return { size: `${n}x${n}x${n}`, iterations: nit, seconds, mops, verified, lines }
}

function checkProcs (cls: NpbClass, np: number): string | null {
  if (!Object.prototype.hasOwnProperty.call(CLASSES, cls)) return `MG has no class ${String(cls)}`
  if (!Number.isInteger(np) || np < 1 || (np & (np - 1)) !== 0) return 'MG needs a power of two ranks'
  if (np > MAX_PROCS) return `MG runs on at most ${MAX_PROCS} ranks here (more would leave coarse levels without points on some ranks, which is not implemented)`
  return null
}

export const kernel: NpbKernel = {
  name: 'mg',
  title: 'MG Benchmark',
  checkProcs,
  run
}
