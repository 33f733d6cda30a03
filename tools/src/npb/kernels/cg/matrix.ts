/**
 * CG's problem: the class parameters, the 2-D process grid with its exchange partners, and the
 * random sparse symmetric matrix each rank holds a block of (NPB 3.4's makea, sprnvc, vecset,
 * sparse), generated exactly as the reference does so that every rank's block and the order of
 * its entries match NPB-MPI's.
 */
import { A as MULT, randlc } from '../../random'
import type { NpbClass } from '../../types'

/** A CG class: the order n of the matrix, nonzeros per generated vector, outer iterations, the shift, the reference zeta. */
export interface CgParams { na: number, nonzer: number, niter: number, shift: number, zeta: number }

/** NPB 3.4's CG classes (npbparams.h by setparams; zeta from cg.f's verification). */
export const CG_CLASSES: Record<NpbClass, CgParams> = {
  S: { na: 1400, nonzer: 7, niter: 15, shift: 10, zeta: 8.5971775078648 },
  W: { na: 7000, nonzer: 8, niter: 15, shift: 12, zeta: 10.362595087124 },
  A: { na: 14000, nonzer: 11, niter: 15, shift: 20, zeta: 17.130235054029 },
  B: { na: 75000, nonzer: 13, niter: 75, shift: 60, zeta: 22.712745482631 },
  C: { na: 150000, nonzer: 15, niter: 75, shift: 110, zeta: 28.973605592845 }
}

/** The condition number NPB gives the matrix (rcond in npbparams.h). */
export const RCOND = 0.1

/**
 * One rank's place in CG's nprows × npcols grid (npcols = nprows or 2 × nprows) and what it
 * exchanges. Rows and columns are the matrix's, 1-based inclusive as NPB states them; buffer
 * offsets (send/recv starts) are 0-based into the local vectors.
 */
export interface Grid {
  nprows: number
  npcols: number
  procRow: number
  procCol: number
  firstrow: number
  lastrow: number
  firstcol: number
  lastcol: number
  /** The transpose partner: w's reduced part goes there, q comes from there. */
  exchProc: number
  exchRecvLength: number
  sendStart: number
  sendLen: number
  /** log2(npcols): the steps of the pairwise reduction across the grid row. */
  l2npcols: number
  /** Per step i (0-based; the reference's tag is i + 1): the partner, and the slices sent and received. */
  reduceExchProc: number[]
  reduceSendStarts: number[]
  reduceSendLengths: number[]
  reduceRecvStarts: number[]
  reduceRecvLengths: number[]
  /** Length of the local vectors (na / nprows + 2, as the reference allocates). */
  naa: number
}

/** The grid for `np` ranks (a power of two), rank `me`, matrix order `na` (setup_proc_info, setup_submatrix_info). */
export function makeGrid (na: number, np: number, me: number): Grid {
  const logp = Math.round(Math.log2(np))
  const nprows = 2 ** Math.floor(logp / 2)
  const npcols = 2 ** (logp - Math.floor(logp / 2))
  const procRow = Math.floor(me / npcols)
  const procCol = me - procRow * npcols
  let firstrow: number, lastrow: number, firstcol: number, lastcol: number
  const div = (a: number, b: number): number => Math.floor(a / b)
  if (div(na, npcols) * npcols === na) {
    const colSize = div(na, npcols)
    firstcol = procCol * colSize + 1
    lastcol = firstcol - 1 + colSize
    const rowSize = div(na, nprows)
    firstrow = procRow * rowSize + 1
    lastrow = firstrow - 1 + rowSize
  } else {
    const rowRem = na - div(na, nprows) * nprows
    if (procRow < rowRem) {
      const rowSize = div(na, nprows) + 1
      firstrow = procRow * rowSize + 1
      lastrow = firstrow - 1 + rowSize
    } else {
      const rowSize = div(na, nprows)
      firstrow = rowRem * (rowSize + 1) + (procRow - rowRem) * rowSize + 1
      lastrow = firstrow - 1 + rowSize
    }
    if (npcols === nprows) {
      const colRem = na - div(na, npcols) * npcols
      const colSize = procCol < colRem ? div(na, npcols) + 1 : div(na, npcols)
      firstcol = procCol < colRem ? procCol * colSize + 1 : colRem * (colSize + 1) + (procCol - colRem) * colSize + 1
      lastcol = firstcol - 1 + colSize
    } else {
      const half = npcols / 2
      const pc2 = div(procCol, 2)
      const colRem = na - div(na, half) * half
      const colSize = pc2 < colRem ? div(na, half) + 1 : div(na, half)
      firstcol = pc2 < colRem ? pc2 * colSize + 1 : colRem * (colSize + 1) + (pc2 - colRem) * colSize + 1
      lastcol = firstcol - 1 + colSize
      if (me % 2 === 0) lastcol = firstcol - 1 + div(colSize - 1, 2) + 1
      else { firstcol = firstcol + div(colSize - 1, 2) + 1; lastcol = firstcol - 1 + div(colSize, 2) }
    }
  }
  const nrows = lastrow - firstrow + 1
  let sendStart: number, sendLen: number
  if (npcols === nprows) { sendStart = 0; sendLen = nrows } else if (me % 2 === 0) { sendStart = 0; sendLen = div(1 + nrows, 2) } else { sendStart = div(1 + nrows, 2); sendLen = div(nrows, 2) }
  const exchProc = npcols === nprows
    ? (me % nprows) * nprows + div(me, nprows)
    : 2 * ((div(me, 2) % nprows) * nprows + div(div(me, 2), nprows)) + (me % 2)
  let l2npcols = 0
  for (let i = div(npcols, 2); i > 0; i = div(i, 2)) l2npcols++
  const reduceExchProc: number[] = []
  const reduceSendStarts: number[] = []
  const reduceSendLengths: number[] = []
  const reduceRecvStarts: number[] = []
  const reduceRecvLengths: number[] = []
  let divFactor = npcols
  for (let i = 0; i < l2npcols; i++) {
    const j = ((procCol + divFactor / 2) % divFactor) + div(procCol, divFactor) * divFactor
    reduceExchProc.push(procRow * npcols + j)
    divFactor /= 2
  }
  for (let i = 0; i < l2npcols; i++) {
    if (nprows === npcols) {
      reduceSendStarts.push(sendStart); reduceSendLengths.push(sendLen); reduceRecvLengths.push(nrows)
    } else {
      reduceRecvLengths.push(sendLen)
      if (i === l2npcols - 1) {
        reduceSendLengths.push(nrows - sendLen)
        reduceSendStarts.push(me % 2 === 0 ? sendStart + sendLen : 0)
      } else { reduceSendLengths.push(sendLen); reduceSendStarts.push(sendStart) }
    }
    reduceRecvStarts.push(sendStart)
  }
  return {
    nprows, npcols, procRow, procCol, firstrow, lastrow, firstcol, lastcol, exchProc,
    exchRecvLength: lastcol - firstcol + 1, sendStart, sendLen, l2npcols, reduceExchProc,
    reduceSendStarts, reduceSendLengths, reduceRecvStarts, reduceRecvLengths, naa: div(na, nprows) + 2
  }
}

/** One rank's block of the matrix in compressed sparse rows; colidx is 0-based into the local column range. */
export interface Csr { rowstr: Int32Array, colidx: Int32Array, a: Float64Array }

/**
 * NPB's makea for this rank's block: n outer steps each draw a sparse random vector v (nonzer
 * draws of value and position, plus 0.5 at the step's own index) and add size·v·vᵀ's entries that
 * fall in the block, size shrinking geometrically to rcond; then rcond − shift on the diagonal;
 * then `sparse` sums duplicates row by row. `tran` is the generator's state, advanced in place.
 */
export function makeMatrix (p: CgParams, g: Grid, tran: Float64Array): Csr {
  const n = p.na
  const { nonzer } = p
  const np = g.nprows * g.npcols
  const nzMax = Math.floor(n * (nonzer + 1) / np * (nonzer + 1)) + nonzer + Math.floor(n * (nonzer + 2 + Math.floor(np / 256)) / g.npcols)
  const arow = new Int32Array(nzMax)
  const acol = new Int32Array(nzMax)
  const aelt = new Float64Array(nzMax)
  const v = new Float64Array(nonzer + 2)
  const iv = new Int32Array(nonzer + 2)
  const mark = new Uint8Array(n + 1)
  const ratio = Math.pow(RCOND, 1 / n)
  let size = 1
  let nnza = 0
  let nn1 = 1
  while (nn1 < n) nn1 *= 2
  for (let iouter = 1; iouter <= n; iouter++) {
    // sprnvc: nonzer distinct positions in 1..n, each with a random value
    let nzv = 0
    while (nzv < nonzer) {
      const vecelt = randlc(tran, MULT)
      const vecloc = randlc(tran, MULT)
      const i = Math.trunc(nn1 * vecloc) + 1
      if (i > n || mark[i] !== 0) continue
      mark[i] = 1
      v[nzv] = vecelt
      iv[nzv] = i
      nzv++
    }
    for (let k = 0; k < nzv; k++) mark[iv[k]] = 0
    // vecset: 0.5 at position iouter (replacing a drawn value there, else appended)
    let set = false
    for (let k = 0; k < nzv; k++) if (iv[k] === iouter) { v[k] = 0.5; set = true }
    if (!set) { v[nzv] = 0.5; iv[nzv] = iouter; nzv++ }
    for (let e = 0; e < nzv; e++) {
      const jcol = iv[e]
      if (jcol < g.firstcol || jcol > g.lastcol) continue
      const scale = size * v[e]
      for (let e1 = 0; e1 < nzv; e1++) {
        const irow = iv[e1]
        if (irow < g.firstrow || irow > g.lastrow) continue
        if (nnza >= nzMax) throw new Error(`CG: space for the matrix's elements exceeded (${nzMax})`)
        acol[nnza] = jcol; arow[nnza] = irow; aelt[nnza] = v[e1] * scale; nnza++
      }
    }
    size *= ratio
  }
  for (let i = g.firstrow; i <= g.lastrow; i++) {
    if (i >= g.firstcol && i <= g.lastcol) {
      if (nnza >= nzMax) throw new Error(`CG: space for the matrix's elements exceeded (${nzMax})`)
      acol[nnza] = i; arow[nnza] = i; aelt[nnza] = RCOND - p.shift; nnza++
    }
  }
  return toCsr(n, g, arow, acol, aelt, nnza)
}

/** NPB's sparse: the triplets bucketed by row (stable), then each row's duplicates summed, columns in order of first appearance. */
function toCsr (n: number, g: Grid, arow: Int32Array, acol: Int32Array, aelt: Float64Array, nnza: number): Csr {
  const nrows = g.lastrow - g.firstrow + 1
  const rowstr = new Int32Array(nrows + 1)
  for (let k = 0; k < nnza; k++) rowstr[arow[k] - g.firstrow + 1]++
  for (let j = 1; j <= nrows; j++) rowstr[j] += rowstr[j - 1]
  const fill = rowstr.slice(0, nrows)
  const a = new Float64Array(nnza)
  const colidx = new Int32Array(nnza)
  for (let k = 0; k < nnza; k++) {
    const j = arow[k] - g.firstrow
    const at = fill[j]++
    a[at] = aelt[k]
    colidx[at] = acol[k]
  }
  const x = new Float64Array(n + 1)
  const mark = new Uint8Array(n + 1)
  const nzloc = new Int32Array(n)
  let nza = 0
  let start = rowstr[0]
  for (let j = 0; j < nrows; j++) {
    let nzrow = 0
    const end = rowstr[j + 1]
    for (let k = start; k < end; k++) {
      const i = colidx[k]
      x[i] += a[k]
      if (mark[i] === 0 && x[i] !== 0) { mark[i] = 1; nzloc[nzrow++] = i }
    }
    for (let k = 0; k < nzrow; k++) {
      const i = nzloc[k]
      mark[i] = 0
      const xi = x[i]
      x[i] = 0
      if (xi !== 0) { a[nza] = xi; colidx[nza] = i - g.firstcol; nza++ }
    }
    start = end
    rowstr[j + 1] = nza
  }
  return { rowstr, colidx: colidx.slice(0, nza), a: a.slice(0, nza) }
}
