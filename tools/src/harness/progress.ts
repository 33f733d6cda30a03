/**
 * Progress of a `fastsock pipe` run: a cli-progress bar on stderr when stderr is a terminal and
 * the optional package cli-progress is installed (else one line says what to install);
 * otherwise silent. Warnings go straight to stderr when no bar is drawn (they are repeated in the
 * report either way).
 */
import type { SingleBar } from 'cli-progress'
import { atInterrupt } from './children'
import { loadOptional, MissingDependencyError } from './optional'

export class Progress {
  private bar: SingleBar | null = null
  private value = 0

  /** `enabled`: draw a bar (only honoured when stderr is a TTY); `tool` names it. */
  constructor (private readonly enabled: boolean, private readonly tool = 'fastsock pipe') {}

  start (total: number): void {
    if (!this.enabled || process.stderr.isTTY !== true) return
    let cliProgress: typeof import('cli-progress')
    try {
      cliProgress = loadOptional<typeof import('cli-progress')>('cli-progress', "fastsock pipe's progress bar")
    } catch (err) {
      if (!(err instanceof MissingDependencyError)) throw err
      process.stderr.write(`fastsock pipe: no progress bar: ${err.message}\n`)
      return
    }
    const { Presets, SingleBar } = cliProgress
    this.bar = new SingleBar({
      stream: process.stderr,
      format: `${this.tool} {bar} {value}/{total} cells | {eta_formatted} left | {cell}`,
      fps: 4, // few redraws: the timer shares the measuring thread
      hideCursor: true,
      clearOnComplete: true,
      etaBuffer: 30
    }, Presets.shades_classic)
    this.bar.start(total, 0, { cell: 'starting' })
    atInterrupt(() => this.stop())
  }

  /** Names the cell being measured. */
  step (cell: string): void {
    this.bar?.update(this.value, { cell })
  }

  /** One cell done. */
  tick (): void {
    this.value++
    this.bar?.update(this.value)
  }

  /** Adds cells discovered late (for example NPtcp found). */
  grow (cells: number): void {
    if (this.bar !== null) this.bar.setTotal(this.bar.getTotal() + cells)
  }

  stop (): void {
    this.bar?.stop()
    this.bar = null
  }

  /** Prints a warning now unless a bar is being drawn. */
  warn (message: string): void {
    if (this.bar === null) process.stderr.write(`${this.tool}: warning: ${message}\n`)
  }

  /** Records `message` in a run's `warnings` (its JSON output) and prints it (warn). */
  recordWarning (result: { warnings: string[] }, message: string): void {
    result.warnings.push(message)
    this.warn(message)
  }

  /**
   * Records a failed cell or step in a run's `errors` as `what: <err's message>` and prints it;
   * the run goes on and the tool's exit status reports it.
   */
  recordError (result: { errors: string[] }, what: string, err: unknown): void {
    const message = `${what}: ${(err as Error)?.message ?? String(err)}`
    result.errors.push(message)
    this.warn(message)
  }
}
