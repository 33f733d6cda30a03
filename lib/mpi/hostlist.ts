/**
 * Slurm's compact list syntaxes, as srun exports them to every task:
 * - host lists (`SLURM_STEP_NODELIST`, `SLURM_JOB_NODELIST`): comma-separated names, each with
 *   zero or more bracketed range sets, `node[01-03,7],gpu5` = node01 node02 node03 node7 gpu5;
 *   several brackets in one name expand as a cartesian product (`r[1-2]n[1-2]` = r1n1 r1n2 r2n1
 *   r2n2); a range keeps the zero padding of its lower bound (`n[008-010]` = n008 n009 n010).
 *   The syntax is Slurm's `hostlist_create()` (src/common/hostlist.c), re-derived from its man
 *   pages (scontrol show hostnames), not copied.
 * - task counts per node (`SLURM_STEP_TASKS_PER_NODE`, `SLURM_TASKS_PER_NODE`): `2(x3),1` =
 *   2 2 2 1.
 * Errors: a malformed list throws MpiError code 'ERR_MPI_LAUNCH'.
 */

import { type MpiError, mpiError } from './errors'

/** The error this module throws: MpiError 'ERR_MPI_LAUNCH'. */
function malformed (what: string, text: string, why: string): MpiError {
  return mpiError('ERR_MPI_LAUNCH', `malformed Slurm ${what} '${text}': ${why}`)
}

/** Upper bound on the names one list may expand to (a typo like n[1-999999999] must not hang). */
export const MAX_HOSTS = 1_000_000

/**
 * Splits `text` at the commas that are outside brackets. Throws on unbalanced brackets.
 */
function splitTopLevel (text: string): string[] {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '[') {
      if (depth > 0) throw malformed('host list', text, 'nested brackets')
      depth++
    } else if (c === ']') {
      if (depth === 0) throw malformed('host list', text, `']' without '[' at ${i}`)
      depth--
    } else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i))
      start = i + 1
    }
  }
  if (depth !== 0) throw malformed('host list', text, "'[' without ']'")
  parts.push(text.slice(start))
  return parts.map(s => s.trim()).filter(s => s.length > 0)
}

/** The names one bracket body (`01-03,7`) stands for, as strings with their padding. */
function expandRangeSet (body: string, whole: string): string[] {
  const out: string[] = []
  for (const item of body.split(',')) {
    const m = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(item)
    if (m === null) throw malformed('host list', whole, `bad range '${item}'`)
    const lo = m[1]
    const hi = m[2] ?? m[1]
    const a = Number(lo)
    const b = Number(hi)
    if (b < a) throw malformed('host list', whole, `descending range '${item}'`)
    if (b - a + 1 > MAX_HOSTS) throw malformed('host list', whole, `range '${item}' too long`)
    const width = lo.length
    for (let v = a; v <= b; v++) out.push(String(v).padStart(width, '0'))
  }
  return out
}

/**
 * Expands a Slurm host list into its host names, in Slurm's order.
 * `expandHostlist('node[01-03,7],gpu5')` → ['node01', 'node02', 'node03', 'node7', 'gpu5'].
 * An empty or blank string gives []. Throws MpiError ERR_MPI_LAUNCH when malformed.
 */
export function expandHostlist (text: string): string[] {
  const hosts: string[] = []
  for (const part of splitTopLevel(text)) {
    // Pieces: literal text and bracket bodies, alternating.
    let names = ['']
    const re = /\[([^\]]*)\]/g
    let last = 0
    let m: RegExpExecArray | null
    while ((m = re.exec(part)) !== null) {
      const literal = part.slice(last, m.index)
      const values = expandRangeSet(m[1], text)
      if (names.length * values.length > MAX_HOSTS) throw malformed('host list', text, 'too many hosts')
      const next: string[] = []
      for (const n of names) for (const v of values) next.push(n + literal + v)
      names = next
      last = re.lastIndex
    }
    const tail = part.slice(last)
    for (const n of names) hosts.push(n + tail)
    if (hosts.length > MAX_HOSTS) throw malformed('host list', text, 'too many hosts')
  }
  return hosts
}

/** The first host of a Slurm host list without expanding the rest; undefined when empty. */
export function firstHost (text: string): string | undefined {
  const parts = splitTopLevel(text)
  if (parts.length === 0) return undefined
  // Expanding the first part alone is cheap only for its first value: take the lower bound of
  // each bracket's first range.
  const first = parts[0].replace(/\[([^\]]*)\]/g, (_all, body: string) => {
    const values = expandRangeSet(body.split(',')[0].split('-')[0], text)
    return values[0]
  })
  return first
}

/**
 * Expands a Slurm tasks-per-node list: `2(x3),1` → [2, 2, 2, 1]. Throws MpiError
 * ERR_MPI_LAUNCH when malformed.
 */
export function expandTasksPerNode (text: string): number[] {
  const out: number[] = []
  for (const item of text.split(',').map(s => s.trim()).filter(s => s.length > 0)) {
    const m = /^(\d+)(?:\(x(\d+)\))?$/.exec(item)
    if (m === null) throw malformed('tasks-per-node list', text, `bad item '${item}'`)
    const count = Number(m[1])
    const repeat = m[2] === undefined ? 1 : Number(m[2])
    if (out.length + repeat > MAX_HOSTS) throw malformed('tasks-per-node list', text, 'too many nodes')
    for (let i = 0; i < repeat; i++) out.push(count)
  }
  return out
}
