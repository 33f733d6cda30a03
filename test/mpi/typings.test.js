'use strict'
// fastsock/mpi's published typings (dist/mpi/index.d.ts) as a TypeScript program uses them: the
// classes as values and as types, the ops, IN_PLACE as the unique symbol the collectives accept.
// (lib/mpi/index.ts exports plain properties, not re-exports; a `const IN_PLACE = coll.IN_PLACE`
// without its type annotation widened it to `symbol`, which allreduce rejects.) Compiled with the
// TypeScript the project builds with, no emit; a program that must not compile checks that the
// check can fail.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const ts = require('typescript')

const DIST_MPI = path.join(__dirname, '..', '..', 'dist', 'mpi')

/** The diagnostics of compiling `source` (strict) against dist/mpi, as text lines. */
function diagnostics (source) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-typings-'))
  try {
    const file = path.join(dir, 'use.ts')
    fs.writeFileSync(file, source.replace('MPI', JSON.stringify(DIST_MPI)))
    const program = ts.createProgram([file], { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, skipLibCheck: true, types: ['node'] })
    return ts.getPreEmitDiagnostics(program).map(d => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

t.test('a program using fastsock/mpi compiles against its typings', async t => {
  const errs = diagnostics(`
import * as mpi from MPI
export async function use (comm: mpi.Comm): Promise<number> {
  const a = new Float64Array(4)
  comm.allreduceSync(mpi.IN_PLACE, a, mpi.SUM)
  await comm.allreduce(mpi.IN_PLACE, a, mpi.MAX)
  const r: mpi.Request = comm.isend(a, 1, 0)
  const st: mpi.Status = await comm.recv(new Float64Array(4), mpi.ANY_SOURCE, mpi.ANY_TAG)
  await r.wait()
  const op: mpi.Op = mpi.Op.create((x, y) => { void x; void y }, { commute: true })
  const typed: mpi.Op = mpi.Op.create((inout: Float64Array, input: Float64Array) => { for (let i = 0; i < inout.length; i++) inout[i] = Math.hypot(inout[i], input[i]) })
  void typed
  const e: mpi.MpiError | null = null
  const all = mpi.algorithmTable()
  void op; void e
  return st.count + all.length + mpi.TAG_UB + mpi.UNDEFINED + mpi.PROC_NULL + mpi.DEFAULT_EAGER_BYTES
}
`)
  t.same(errs, [], errs.join('\n'))
})

t.test('the check can fail: a plain symbol is not IN_PLACE', async t => {
  const errs = diagnostics(`
import * as mpi from MPI
export function use (comm: mpi.Comm): void {
  comm.allreduceSync(Symbol('not IN_PLACE'), new Float64Array(1), mpi.SUM)
}
`)
  t.ok(errs.length > 0 && errs.some(e => /not assignable/.test(e)), `rejected: ${errs.join('; ')}`)
})
