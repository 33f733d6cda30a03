/**
 * The shapes of the collectives' table (select.ts): what selection looks at (`Case`), one
 * algorithm's record (`Algorithm`), and a call as a record's functions see it (`Call`, which
 * check.ts CheckedComm is). In a file of their own so the algorithms' files, which select.ts
 * imports, can name them without an import cycle.
 */
import type { CollComm } from './types'
import type { Op } from './ops'
import type { CollSteps } from './drive'

/** What selection looks at. `bytes`: the message of one rank (allgather/alltoall: one block). */
export interface Case {
  bytes: number
  /** Total bytes of the result (allgather: P·block). */
  total: number
  P: number
  /** The op commutes (true when there is no op). */
  commute: boolean
  /** Items to reduce (elements / op.unit); 0 where there is no op. */
  items: number
}

/**
 * A call as an algorithm's functions see it (check.ts CheckedComm is one; declared here so the
 * table does not import check.ts, which reads it): a CollComm that also carries the call's `rec`,
 * `seq` (and `seq2`, a second sequence number of the collectives that take one), `buf` (bcast's
 * buf, allreduce's recvbuf), `n` (buf's bytes), `op`, `root`, `seg`, `count`, and `data`: the
 * other collectives' arguments as their preamble (index.ts) prepared them for the record's run.
 */
export interface Call extends CollComm {
  readonly rec: Algorithm
  readonly root: number
  seq: number
  seq2: number
  buf: ArrayBufferView
  op: Op | null
  seg: number
  n: number
  data: unknown
  readonly count: number
}

/** One algorithm of one collective. */
export interface Algorithm {
  readonly collective: string
  readonly name: string
  /** Its id in the descriptor (check.ts), 1..255, unique within the collective (a call and its peer naming different algorithms differ in it). */
  readonly wire: number
  /** When the default selection takes it. */
  readonly when: string
  readonly source: string
  /** Why this algorithm cannot serve the case, or null. */
  readonly cannot?: (c: Case) => string | null
  /**
   * Its steps (drive.ts), which the blocking tier drives with waitSync and the awaited tier with
   * the same waits under its bound (tier.ts) or with wait(). Every algorithm has either steps or
   * `awaited`, never both.
   */
  readonly steps?: (call: Call) => CollSteps
  /** Whether the blocking tier's waits serve this call (default: yes); else both tiers drive the steps with wait() (e.g. a pipeline of several segments). */
  readonly stepsServe?: (call: Call) => boolean
  /**
   * The blocking tier's direct path (docs/mpi-collectives.md, "Direct paths"): the steps' messages
   * without their machinery. Null: done; else the rest (all of it when nothing could be sent
   * now) as steps, which the blocking tier drives as it drives `steps`.
   */
  readonly direct?: (call: Call) => CollSteps | null
  /** The run of an algorithm of the awaited tier only (no steps): both tiers run it in the event loop. */
  readonly awaited?: (call: Call) => Promise<void>
}
