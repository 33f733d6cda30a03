/**
 * The watchdog: no rank waits silently (docs/mpi-launch.md, "Lifecycle"). One unref'd timer per
 * process (a tick per second) looks at what this rank waits for:
 *
 * - every posted receive (the matcher's queue: a receive, a probe's receive, a collective's step;
 *   a receive on context 2·id+1 is collective number `tag >>> 16` (mod 2^15) of communicator `id`,
 *   coll/util.ts collTag), with the time it was first seen;
 * - finalize's wait for the other ranks (`finalizeWaiting`, set by device-init.ts);
 * - `slot`: what a caller announced (`enter(what, ranks)` / `leave()`: one field write each,
 *   for the collectives' and blocking receives' entry points).
 *
 * A wait longer than `boundMs` (default 10000; init option `watchMs`, env FASTSOCK_MPI_WATCH_MS;
 * 0 turns the report off) is reported once on stderr: which ranks this one waits for and what the
 * store knows of each (in finalize; gone; waiting in what, as its own report published it under
 * `wait/<rank>`; no report). A receive from a rank that entered finalize is failed once it has
 * stayed posted CONFIRM_MS after that was seen (its sender drained every send before it said
 * so): a collective's with ERR_MPI_COLL_MISMATCH naming the rank and the collective, a
 * point-to-point one with ERR_MPI_PEER_LOST. Receives are checked against the store once they
 * waited CHECK_MS.
 *
 * Blocking calls (recvSync, waitSync, the *Sync collectives) stop the event loop, and the timer
 * with it: they are not watched.
 */
import type { Device } from './device'
import type { PostedRecv } from './match'
import type { StoreClient } from './store'
import { mpiError, outOfRange, peerLost } from './errors'

/** Default bound before a wait is reported, ms. */
export const DEFAULT_WATCH_MS = 10000
/** A posted receive is checked against the store (its source in finalize?) after this long, ms. */
export const CHECK_MS = 1000
/** ... and failed when still posted this long after its source was seen in finalize, ms. */
export const CONFIRM_MS = 1000
/** The timer's period, ms. */
export const TICK_MS = 500

/** What a caller announced it waits for (enter/leave). `ranks` are world ranks. */
export const slot: { what: string | null, ranks: readonly number[] | null, since: number, reported: boolean } = { what: null, ranks: null, since: 0, reported: false }

/** Announces a wait: `what` (e.g. 'allreduce #3 of communicator 0'), for world ranks `ranks`. */
export function enter (what: string, ranks: readonly number[] | null): void {
  slot.what = what
  slot.ranks = ranks
  slot.since = Date.now()
  slot.reported = false
}

/** Ends the wait enter() announced. */
export function leave (): void { slot.what = null }

/** The bound from `option` or FASTSOCK_MPI_WATCH_MS (ms, 0: no reports); ERR_OUT_OF_RANGE on a bad value. */
export function watchMsOf (option: unknown, env: NodeJS.ProcessEnv = process.env): number {
  const raw = option ?? (env.FASTSOCK_MPI_WATCH_MS !== undefined && env.FASTSOCK_MPI_WATCH_MS !== '' ? Number(env.FASTSOCK_MPI_WATCH_MS) : DEFAULT_WATCH_MS)
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw < 0 || raw > 2 ** 31 - 1) {
    throw outOfRange(`watchMs (FASTSOCK_MPI_WATCH_MS) must be a number of ms in [0, 2^31 - 1], got ${String(option ?? env.FASTSOCK_MPI_WATCH_MS)}`)
  }
  return raw
}

/** What a posted receive is, in words. */
export function describeRecv (p: PostedRecv): string {
  if ((p.ctx & 1) === 1) return `collective #${p.tag >>> 16} of communicator ${(p.ctx - 1) / 2}`
  const from = p.source === -1 ? 'ANY_SOURCE' : `rank ${p.source}`
  return `a receive from ${from} (tag ${p.tag === -1 ? 'ANY_TAG' : p.tag}) on communicator ${p.ctx / 2}`
}

interface Seen { since: number, reported: boolean, finSeen: number }

/** The per-process watchdog (one per init()). */
export class Watchdog {
  /** World ranks finalize still waits for, with when it started; null outside finalize. */
  finalizeWaiting: { ranks: Set<number>, since: number, reported: boolean } | null = null
  /** Where reports go (stderr; a parameter for tests). */
  out: (line: string) => void = line => { process.stderr.write(line + '\n') }
  private readonly seen = new Map<PostedRecv, Seen>()
  private readonly timer: NodeJS.Timeout
  private busy = false
  /** This rank's `wait/<rank>` key is set. */
  private published = false

  constructor (private readonly device: Device, private readonly store: StoreClient | null, readonly boundMs: number, private readonly finKey: (r: number) => string) {
    this.timer = setInterval(() => { if (!this.busy) { this.busy = true; this.tick().catch(() => {}).finally(() => { this.busy = false }) } }, TICK_MS)
    this.timer.unref()
  }

  /** Stops the timer. */
  stop (): void { clearInterval(this.timer) }

  private async tick (): Promise<void> {
    const now = Date.now()
    const posted = this.device.matcher.allPosted()
    const live = new Set(posted)
    for (const p of this.seen.keys()) if (!live.has(p) || p.req.done) this.seen.delete(p)
    for (const p of posted) if (!this.seen.has(p)) this.seen.set(p, { since: now, reported: false, finSeen: 0 })
    const store = this.store
    if (store === null) return
    // Receives waiting on ranks that entered finalize.
    const old = posted.filter(p => now - (this.seen.get(p)?.since ?? now) >= CHECK_MS)
    if (old.length > 0) {
      const ranks = new Set<number>()
      for (const p of old) for (const r of p.anyOf ?? [p.worldSource]) if (r !== this.device.rank) ranks.add(r)
      const fin = await this.inFinalize([...ranks])
      for (const p of old) {
        const s = this.seen.get(p)
        if (s === undefined || p.req.done) continue
        const waits = (p.anyOf ?? [p.worldSource]).filter(r => r !== this.device.rank)
        if (waits.length === 0 || !waits.every(r => fin.has(r))) { s.finSeen = 0; continue }
        if (s.finSeen === 0) { s.finSeen = Date.now(); continue }
        if (Date.now() - s.finSeen < CONFIRM_MS) continue
        this.device.matcher.unpost(p)
        this.seen.delete(p)
        const who = waits.length === 1 ? `rank ${waits[0]}` : `ranks ${waits.join(', ')}`
        const collective = (p.ctx & 1) === 1
        p.req._fail(collective
          ? mpiError('ERR_MPI_COLL_MISMATCH', `${describeRecv(p)}: world ${who} entered finalize while world rank ${this.device.rank} waits in it (${who} skipped this collective)`, { rank: waits[0] })
          : peerLost(waits[0], `it entered finalize while world rank ${this.device.rank} waits in ${describeRecv(p)}`))
      }
    }
    if (this.boundMs <= 0) return
    // Reports, once each.
    for (const p of posted) {
      const s = this.seen.get(p)
      if (s === undefined || s.reported || now - s.since < this.boundMs) continue
      s.reported = true
      await this.report(`in ${describeRecv(p)}`, p.anyOf ?? [p.worldSource], now - s.since)
    }
    const f = this.finalizeWaiting
    if (f !== null && !f.reported && now - f.since >= this.boundMs && f.ranks.size > 0) {
      f.reported = true
      await this.report('in finalize', [...f.ranks], now - f.since)
    }
    if (slot.what !== null && !slot.reported && now - slot.since >= this.boundMs) {
      slot.reported = true
      await this.report(`in ${slot.what}`, slot.ranks ?? [], now - slot.since)
    }
    // The reported waits are over: take this rank's `wait/` key back (others' reports read it).
    if (this.published && ![...this.seen.values()].some(x => x.reported) && !(f?.reported ?? false) && !(slot.what !== null && slot.reported)) {
      this.published = false
      await store.deleteKey(`wait/${this.device.rank}`).catch(() => {})
    }
  }

  /** The ranks of `ranks` whose finalize key is in the store. */
  private async inFinalize (ranks: number[]): Promise<Set<number>> {
    const out = new Set<number>()
    const store = this.store
    if (store === null) return out
    await Promise.all(ranks.map(async r => { if (await store.check([this.finKey(r)]).catch(() => false)) out.add(r) }))
    return out
  }

  /** Prints that this rank waited `ms` in `where` for `ranks`, with what the store knows of each; publishes it. */
  private async report (where: string, ranks: readonly number[], ms: number): Promise<void> {
    const me = this.device.rank
    const others = [...new Set(ranks)].filter(r => r !== me).sort((a, b) => a - b)
    const shown = others.length > 8 ? others.slice(0, 8) : others
    const store = this.store
    const fin = await this.inFinalize(shown)
    const states = await Promise.all(shown.map(async r => {
      const lost = this.device.lostReason(r) ?? (store?.lostRanks.has(r) === true ? 'the store reported it lost' : undefined)
      if (lost !== undefined) return `rank ${r} gone (${lost})`
      if (fin.has(r)) return `rank ${r} in finalize`
      if (store !== null && await store.check([`wait/${r}`]).catch(() => false)) {
        const v = await store.get(`wait/${r}`, { timeoutMs: 1000 }).catch(() => null)
        if (v !== null) return `rank ${r} waiting ${Buffer.from(v).toString('utf8')}`
      }
      return `rank ${r} running (no wait reported)`
    }))
    const more = others.length > shown.length ? `; and ${others.length - shown.length} more` : ''
    const line = `fastsock/mpi: rank ${me} has waited ${(ms / 1000).toFixed(0)} s ${where} for ${others.length === 1 ? 'rank' : 'ranks'} ${others.join(', ')}: ${states.join('; ')}${more}`
    this.out(line)
    this.published = true
    if (store !== null) await store.set(`wait/${me}`, `${where} for ${others.length === 1 ? 'rank' : 'ranks'} ${shown.join(', ')}${more} (since ${new Date(Date.now() - ms).toISOString()})`).catch(() => {})
  }
}
