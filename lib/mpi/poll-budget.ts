/**
 * The learned polling budget of one connection's receive fast path (device-conn.ts pollFrames),
 * with the rule of KVM's haltpoll governor (Linux drivers/cpuidle/governors/haltpoll.c), the same
 * rule as fastsock's own polling window in the native progress engine (csrc/progress.cc
 * PollWindow::EndWait; docs/polling.md):
 *
 * - a wait caught within the budget leaves it unchanged;
 * - a wait the polling missed is timed from its start until its frame arrives through the event
 *   loop: if a budget up to the cap would have caught it, the budget doubles (at least
 *   GROW_START_US), else it halves, but not below `floorUs` (or the cap when smaller).
 *
 * All times are µs; `now` arguments are performance.now() values (ms).
 */

/** The budget a miss grows to first (haltpoll's grow_start), µs. */
const GROW_START_US = 10

export class PollBudget {
  /** The current budget per wait, µs; -1 before the first wait. */
  budgetUs = -1
  /** The cap it was learned under, µs (a new cap restarts it at the cap). */
  capUs = 0
  /** When the current wait started (ms). */
  private waitAt = 0
  /** When a missed wait started (ms); 0: none pending. */
  private missAt = 0
  private readonly floorUs: number

  /** `floorUs`: the budget never halves below this (µs, or the cap when smaller). */
  constructor (floorUs: number) {
    this.floorUs = floorUs
  }

  /**
   * A wait's slice starts at `now` (a new wait unless `cont`, the next slice of the same one):
   * returns what is left of this wait's budget, µs (<= 0: spent).
   */
  left (capUs: number, now: number, cont: boolean): number {
    if (this.budgetUs < 0 || this.capUs !== capUs) { this.budgetUs = capUs; this.capUs = capUs }
    if (!cont) this.waitAt = now
    return this.budgetUs - (now - this.waitAt) * 1000
  }

  /** The current wait goes to the event loop: it is timed until arrived(). */
  miss (): void {
    this.missAt = this.waitAt
  }

  /** True while a missed wait is being timed. */
  get missing (): boolean {
    return this.missAt !== 0
  }

  /** The missed wait's frame arrived at `now` (ms): adapt the budget (the rule above). */
  arrived (now: number): void {
    const blockUs = (now - this.missAt) * 1000
    this.missAt = 0
    const b = this.budgetUs
    if (blockUs <= this.capUs) this.budgetUs = Math.min(this.capUs, Math.max(b * 2, GROW_START_US))
    else this.budgetUs = Math.max(b / 2, Math.min(this.capUs, this.floorUs))
  }
}
