/**
 * MG's four grid operators and its norm, over one level's grid held flat in a Float64Array:
 * point (i1, i2, i3), 0-based with the ghost layer at 0 and n - 1 in each axis, is at
 * i1 + n1 * (i2 + n2 * i3). The algorithms and their operation order are NPB 3.4's (mg.f:
 * resid, psinv, rprj3, interp, norm2u3), so the sums round as the reference's do.
 *
 * Written for V8's optimizing compiler: each operator is a small function whose arguments are
 * always the same types (Float64Array, integers, doubles), the row offsets are computed once per
 * row, and the partial sums along the first axis are carried in locals from one i1 to the next
 * instead of the reference's two scratch rows (each sum is still formed once, in the same order,
 * so the results are bitwise the reference's). resid and psinv walk two planes at once to load
 * the rows their stencils share once. Nothing here allocates.
 */

/**
 * r = v - A u on the interior (A: the 27-point Laplacian with coefficients a0..a3; a1 = 0, as
 * NPB's classes have it, so the face neighbours along the first axis drop out). `v` may be `r`
 * (the coarse levels compute the residual in place). Ghosts of `r` are left to comm3.
 */
export function resid (u: Float64Array, v: Float64Array, r: Float64Array, n1: number, n2: number, n3: number,
  a0: number, a2: number, a3: number): void {
  let i3 = 1
  for (; i3 + 1 < n3 - 1; i3 += 2) residPair(u, v, r, n1, n2, i3, a0, a2, a3)
  if (i3 < n3 - 1) residPlane(u, v, r, n1, n2, i3, a0, a2, a3)
}

/**
 * resid on planes i3 and i3 + 1 together: of the 18 rows the two points' stencils read, 6 are
 * shared (the rows of plane i3 + 1 next to plane i3's, and the reverse), so each value is
 * loaded once for both. The sums are the ones residPlane forms, in the same order.
 */
function residPair (u: Float64Array, v: Float64Array, r: Float64Array, n1: number, n2: number, i3: number,
  a0: number, a2: number, a3: number): void {
  const n12 = n1 * n2
  for (let i2 = 1; i2 < n2 - 1; i2++) {
    const c = i2 * n1 + i3 * n12 // row (i2, i3); d below is row (i2, i3 + 1)
    const d = c + n12
    const mm = c - n1 - n12 // (i2 - 1, i3 - 1)
    const pm = c + n1 - n12 // (i2 + 1, i3 - 1)
    const zm = c - n12 // (i2, i3 - 1)
    const m0 = c - n1 // (i2 - 1, i3)
    const p0 = c + n1 // (i2 + 1, i3)
    const m1 = d - n1 // (i2 - 1, i3 + 1)
    const p1 = d + n1 // (i2 + 1, i3 + 1)
    const m2 = m1 + n12 // (i2 - 1, i3 + 2)
    const p2 = p1 + n12 // (i2 + 1, i3 + 2)
    const z2 = d + n12 // (i2, i3 + 2)
    // First point's edge (e) and corner (k) sums, second point's (f, l); a, b: columns i1 - 1, i1.
    let ea = u[m0] + u[p0] + u[zm] + u[d]
    let ka = u[mm] + u[pm] + u[m1] + u[p1]
    let fa = u[m1] + u[p1] + u[c] + u[z2]
    let la = u[m0] + u[p0] + u[m2] + u[p2]
    let eb = u[m0 + 1] + u[p0 + 1] + u[zm + 1] + u[d + 1]
    let kb = u[mm + 1] + u[pm + 1] + u[m1 + 1] + u[p1 + 1]
    let fb = u[m1 + 1] + u[p1 + 1] + u[c + 1] + u[z2 + 1]
    let lb = u[m0 + 1] + u[p0 + 1] + u[m2 + 1] + u[p2 + 1]
    for (let i1 = 1; i1 < n1 - 1; i1++) {
      const j = i1 + 1
      const xm0 = u[m0 + j]
      const xp0 = u[p0 + j]
      const xm1 = u[m1 + j]
      const xp1 = u[p1 + j]
      const ec = xm0 + xp0 + u[zm + j] + u[d + j]
      const kc = u[mm + j] + u[pm + j] + xm1 + xp1
      const fc = xm1 + xp1 + u[c + j] + u[z2 + j]
      const lc = xm0 + xp0 + u[m2 + j] + u[p2 + j]
      r[c + i1] = v[c + i1] - a0 * u[c + i1] - a2 * (kb + ea + ec) - a3 * (ka + kc)
      r[d + i1] = v[d + i1] - a0 * u[d + i1] - a2 * (lb + fa + fc) - a3 * (la + lc)
      ea = eb; eb = ec; ka = kb; kb = kc
      fa = fb; fb = fc; la = lb; lb = lc
    }
  }
}

/** resid on the single plane i3 (the last one when a rank holds an odd number of planes). */
function residPlane (u: Float64Array, v: Float64Array, r: Float64Array, n1: number, n2: number, i3: number,
  a0: number, a2: number, a3: number): void {
  const n12 = n1 * n2
  for (let i2 = 1; i2 < n2 - 1; i2++) {
    const c = i2 * n1 + i3 * n12
    const ym = c - n1
    const yp = c + n1
    const zm = c - n12
    const zp = c + n12
    const ymzm = ym - n12
    const ypzm = yp - n12
    const ymzp = ym + n12
    const ypzp = yp + n12
    // u1: the 4 edge-adjacent neighbours in the (i2, i3) plane of column i1; u2: its 4 corners.
    let u1a = u[ym] + u[yp] + u[zm] + u[zp]
    let u2a = u[ymzm] + u[ypzm] + u[ymzp] + u[ypzp]
    let u1b = u[ym + 1] + u[yp + 1] + u[zm + 1] + u[zp + 1]
    let u2b = u[ymzm + 1] + u[ypzm + 1] + u[ymzp + 1] + u[ypzp + 1]
    for (let i1 = 1; i1 < n1 - 1; i1++) {
      const j = i1 + 1
      const u1c = u[ym + j] + u[yp + j] + u[zm + j] + u[zp + j]
      const u2c = u[ymzm + j] + u[ypzm + j] + u[ymzp + j] + u[ypzp + j]
      r[c + i1] = v[c + i1] - a0 * u[c + i1] - a2 * (u2b + u1a + u1c) - a3 * (u2a + u2c)
      u1a = u1b; u1b = u1c
      u2a = u2b; u2b = u2c
    }
  }
}

/** u = u + C r on the interior (the smoother; c3 = 0 as in NPB's classes). Ghosts of `u` are left to comm3. */
export function psinv (r: Float64Array, u: Float64Array, n1: number, n2: number, n3: number,
  c0: number, c1: number, c2: number): void {
  let i3 = 1
  for (; i3 + 1 < n3 - 1; i3 += 2) psinvPair(r, u, n1, n2, i3, c0, c1, c2)
  if (i3 < n3 - 1) psinvPlane(r, u, n1, n2, i3, c0, c1, c2)
}

/** psinv on planes i3 and i3 + 1 together, sharing the loads of their common rows as residPair does. */
function psinvPair (r: Float64Array, u: Float64Array, n1: number, n2: number, i3: number,
  c0: number, c1: number, c2: number): void {
  const n12 = n1 * n2
  for (let i2 = 1; i2 < n2 - 1; i2++) {
    const c = i2 * n1 + i3 * n12
    const d = c + n12
    const mm = c - n1 - n12
    const pm = c + n1 - n12
    const zm = c - n12
    const m0 = c - n1
    const p0 = c + n1
    const m1 = d - n1
    const p1 = d + n1
    const m2 = m1 + n12
    const p2 = p1 + n12
    const z2 = d + n12
    // Edge sums (e: plane i3, f: plane i3 + 1) at columns i1 - 1, i1; the centres along i1.
    let ea = r[m0] + r[p0] + r[zm] + r[d]
    let fa = r[m1] + r[p1] + r[c] + r[z2]
    let eb = r[m0 + 1] + r[p0 + 1] + r[zm + 1] + r[d + 1]
    let fb = r[m1 + 1] + r[p1 + 1] + r[c + 1] + r[z2 + 1]
    let ra = r[c]
    let rb = r[c + 1]
    let sa = r[d]
    let sb = r[d + 1]
    for (let i1 = 1; i1 < n1 - 1; i1++) {
      const j = i1 + 1
      const xm0 = r[m0 + j]
      const xp0 = r[p0 + j]
      const xm1 = r[m1 + j]
      const xp1 = r[p1 + j]
      const rc = r[c + j]
      const sc = r[d + j]
      const ec = xm0 + xp0 + r[zm + j] + sc
      const fc = xm1 + xp1 + rc + r[z2 + j]
      const kb = r[mm + i1] + r[pm + i1] + r[m1 + i1] + r[p1 + i1]
      const lb = r[m0 + i1] + r[p0 + i1] + r[m2 + i1] + r[p2 + i1]
      u[c + i1] = u[c + i1] + c0 * rb + c1 * (ra + rc + eb) + c2 * (kb + ea + ec)
      u[d + i1] = u[d + i1] + c0 * sb + c1 * (sa + sc + fb) + c2 * (lb + fa + fc)
      ea = eb; eb = ec; fa = fb; fb = fc
      ra = rb; rb = rc; sa = sb; sb = sc
    }
  }
}

/** psinv on the single plane i3. */
function psinvPlane (r: Float64Array, u: Float64Array, n1: number, n2: number, i3: number,
  c0: number, c1: number, c2: number): void {
  const n12 = n1 * n2
  for (let i2 = 1; i2 < n2 - 1; i2++) {
    const c = i2 * n1 + i3 * n12
    const ym = c - n1
    const yp = c + n1
    const zm = c - n12
    const zp = c + n12
    const ymzm = ym - n12
    const ypzm = yp - n12
    const ymzp = ym + n12
    const ypzp = yp + n12
    let r1a = r[ym] + r[yp] + r[zm] + r[zp]
    let r1b = r[ym + 1] + r[yp + 1] + r[zm + 1] + r[zp + 1]
    let rb = r[c]
    let rc = r[c + 1]
    for (let i1 = 1; i1 < n1 - 1; i1++) {
      const j = i1 + 1
      const r1c = r[ym + j] + r[yp + j] + r[zm + j] + r[zp + j]
      const r2b = r[ymzm + i1] + r[ypzm + i1] + r[ymzp + i1] + r[ypzp + i1]
      const rd = r[c + j]
      u[c + i1] = u[c + i1] + c0 * rc + c1 * (rb + rd + r1b) + c2 * (r2b + r1a + r1c)
      r1a = r1b; r1b = r1c
      rb = rc; rc = rd
    }
  }
}

/**
 * s = P r: the fine grid `r` (m1k x m2k x m3k) restricted onto the coarse grid `s` (m1j x m2j x m3j)
 * by NPB's trilinear finite-element projection (weights 1/2, 1/4, 1/8, 1/16). Coarse interior
 * point j sits on fine point 2j in each axis (NPB's d = 1 case: every rank holds at least two fine
 * points per axis). Ghosts of `s` are left to comm3.
 */
export function rprj3 (r: Float64Array, m1k: number, m2k: number,
  s: Float64Array, m1j: number, m2j: number, m3j: number): void {
  const n12 = m1k * m2k
  const s12 = m1j * m2j
  for (let j3 = 1; j3 < m3j - 1; j3++) {
    const i3 = 2 * j3
    for (let j2 = 1; j2 < m2j - 1; j2++) {
      const i2 = 2 * j2
      const c = i2 * m1k + i3 * n12
      const ym = c - m1k
      const yp = c + m1k
      const zm = c - n12
      const zp = c + n12
      const ymzm = ym - n12
      const ypzm = yp - n12
      const ymzp = ym + n12
      const ypzp = yp + n12
      const out = j2 * m1j + j3 * s12
      // x1, y1 at the odd fine columns i1 - 1 and i1 + 1 around fine column i1 = 2 * j1.
      let x1a = r[ym + 1] + r[yp + 1] + r[zm + 1] + r[zp + 1]
      let y1a = r[ymzm + 1] + r[ymzp + 1] + r[ypzm + 1] + r[ypzp + 1]
      for (let j1 = 1; j1 < m1j - 1; j1++) {
        const i1 = 2 * j1
        const o = i1 + 1
        const x1c = r[ym + o] + r[yp + o] + r[zm + o] + r[zp + o]
        const y1c = r[ymzm + o] + r[ymzp + o] + r[ypzm + o] + r[ypzp + o]
        const y2 = r[ymzm + i1] + r[ymzp + i1] + r[ypzm + i1] + r[ypzp + i1]
        const x2 = r[ym + i1] + r[yp + i1] + r[zm + i1] + r[zp + i1]
        s[out + j1] = 0.5 * r[c + i1] +
          0.25 * (r[c + i1 - 1] + r[c + o] + x2) +
          0.125 * (x1a + x1c + y2) +
          0.0625 * (y1a + y1c)
        x1a = x1c
        y1a = y1c
      }
    }
  }
}

/**
 * u = u + Q z: the coarse correction `z` (mm1 x mm2 x mm3) interpolated trilinearly onto the
 * fine grid `u` (n1 x n2 x n3, n = 2 mm - 2 in each axis), ghosts included: coarse point i lands
 * on fine point 2i, the fine points between take the means of their coarse neighbours. NPB's
 * general case (no axis with a single point per rank).
 */
export function interp (z: Float64Array, mm1: number, mm2: number, mm3: number,
  u: Float64Array, n1: number, n2: number): void {
  const z12 = mm1 * mm2
  const n12 = n1 * n2
  for (let i3 = 0; i3 < mm3 - 1; i3++) {
    for (let i2 = 0; i2 < mm2 - 1; i2++) {
      const z00 = i2 * mm1 + i3 * z12 // z(., i2, i3)
      const z10 = z00 + mm1 // z(., i2 + 1, i3)
      const z01 = z00 + z12 // z(., i2, i3 + 1)
      const z11 = z10 + z12 // z(., i2 + 1, i3 + 1)
      const u00 = 2 * i2 * n1 + 2 * i3 * n12 // u(., 2 i2, 2 i3)
      const u10 = u00 + n1
      const u01 = u00 + n12
      const u11 = u10 + n12
      let za = z[z00]
      let z1a = z[z10] + za
      let z2a = z[z01] + za
      let z3a = z[z11] + z[z01] + z1a
      for (let i1 = 0; i1 < mm1 - 1; i1++) {
        const zb = z[z00 + i1 + 1]
        const z1b = z[z10 + i1 + 1] + zb
        const z2b = z[z01 + i1 + 1] + zb
        const z3b = z[z11 + i1 + 1] + z[z01 + i1 + 1] + z1b
        const e = 2 * i1
        const o = e + 1
        u[u00 + e] += za
        u[u00 + o] += 0.5 * (zb + za)
        u[u10 + e] += 0.5 * z1a
        u[u10 + o] += 0.25 * (z1a + z1b)
        u[u01 + e] += 0.5 * z2a
        u[u01 + o] += 0.25 * (z2a + z2b)
        u[u11 + e] += 0.25 * z3a
        u[u11 + o] += 0.125 * (z3a + z3b)
        za = zb; z1a = z1b; z2a = z2b; z3a = z3b
      }
    }
  }
}

/** Sum of squares of the interior of `r` into out[0], and the largest |r| into out[1] (norm2u3's local part). */
export function localNorms (r: Float64Array, n1: number, n2: number, n3: number, out: Float64Array): void {
  const n12 = n1 * n2
  let s = 0
  let mx = 0
  for (let i3 = 1; i3 < n3 - 1; i3++) {
    for (let i2 = 1; i2 < n2 - 1; i2++) {
      const c = i2 * n1 + i3 * n12
      for (let i1 = 1; i1 < n1 - 1; i1++) {
        const x = r[c + i1]
        s += x * x
        const a = Math.abs(x)
        if (a > mx) mx = a
      }
    }
  }
  out[0] = s
  out[1] = mx
}
