'use strict'
// lib/mpi builds its errors in one module (lib/mpi/errors.ts): every ERR_MPI_* code used in
// lib/mpi is in MPI_ERROR_CODES, every one of those is in docs/mpi.md's table, no other file of
// lib/mpi constructs an error, the argument errors are lib/errors.ts's (no copies), and
// isMpiError tells codes apart.
const t = require('tap')
const fs = require('fs')
const path = require('path')

const ROOT = path.join(__dirname, '..', '..')
const LIB = path.join(ROOT, 'lib', 'mpi')
const mpi = require(path.join(ROOT, 'dist', 'mpi'))
const mpiErrors = require(path.join(ROOT, 'dist', 'mpi', 'errors'))
const errors = require(path.join(ROOT, 'dist', 'errors'))

/** Every .ts file under lib/mpi, as paths relative to it. */
function sources (dir = LIB, rel = '') {
  const out = []
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...sources(path.join(dir, e.name), path.join(rel, e.name)))
    else if (e.name.endsWith('.ts')) out.push(path.join(rel, e.name))
  }
  return out
}

/** The file's text without comments (a docstring naming a code or `new Error` is not a use). */
function code (file) {
  return fs.readFileSync(path.join(LIB, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
}

/**
 * Files of lib/mpi whose owners still move their errors to errors.ts's builders (issue 32 item 4):
 * a file leaves this list once it builds none; the test fails while a listed file builds none, so
 * the list only shrinks.
 */
const PENDING = new Set([
])

/** `new XError(`, `new Error(`, `.code = '...'`: constructions of an error. */
const BUILDS = /new\s+[A-Za-z]*Error\s*\(|\.code\s*=\s*['"`]|code:\s*['"`](?:E[A-Z]+|ERR_[A-Z_]+)['"`]\s*}\s*\)/g

t.test('every ERR_MPI_* code used in lib/mpi is in MPI_ERROR_CODES', async t => {
  const known = new Set(mpi.MPI_ERROR_CODES)
  for (const f of sources()) {
    for (const m of code(f).matchAll(/ERR_MPI_[A-Z_]+/g)) t.ok(known.has(m[0]), `${f}: ${m[0]} is in MPI_ERROR_CODES`)
  }
  t.ok(known.size >= 15)
})

t.test("every code of MPI_ERROR_CODES has a row in docs/mpi.md's error table", async t => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'mpi.md'), 'utf8')
  const table = doc.slice(doc.indexOf('### Errors'), doc.indexOf('### Blocking calls'))
  t.ok(table.length > 0, 'the Errors section exists')
  for (const c of mpi.MPI_ERROR_CODES) t.match(table, new RegExp('^\\| `' + c + '` \\(MpiError\\)', 'm'), `${c} is documented`)
})

t.test('no file of lib/mpi but errors.ts builds an error', async t => {
  for (const f of sources()) {
    if (f === 'errors.ts') continue
    const hits = [...code(f).matchAll(BUILDS)].map(m => m[0])
    if (PENDING.has(f)) t.ok(hits.length > 0, `${f} builds errors itself still (else drop it from PENDING)`)
    else t.same(hits, [], `${f} builds no error itself`)
  }
})

t.test("the argument and abort errors are lib/errors.ts's, not copies", async t => {
  t.equal(mpiErrors.invalidArgType, errors.invalidArgType)
  t.equal(mpiErrors.outOfRange, errors.outOfRange)
  t.equal(mpiErrors.abortError, errors.abortError)
  const e = errors.outOfRange('x')
  t.ok(e instanceof RangeError)
  t.equal(e.code, 'ERR_OUT_OF_RANGE')
  const a = errors.abortError('why')
  t.equal(a.name, 'AbortError')
  t.equal(a.code, 'ABORT_ERR')
  t.equal(a.cause, 'why')
})

t.test('isMpiError tells an MpiError and its code', async t => {
  const e = new mpi.MpiError('ERR_MPI_TRUNCATE', 'too small', { rank: 2 })
  t.equal(e.code, 'ERR_MPI_TRUNCATE')
  t.equal(e.rank, 2)
  t.equal(e.name, 'MpiError')
  t.ok(mpi.isMpiError(e))
  t.ok(mpi.isMpiError(e, 'ERR_MPI_TRUNCATE'))
  t.notOk(mpi.isMpiError(e, 'ERR_MPI_TIMEOUT'))
  t.notOk(mpi.isMpiError(Object.assign(new Error('x'), { code: 'ERR_MPI_TRUNCATE' }), 'ERR_MPI_TRUNCATE'), 'a plain Error with the code is not one')
  t.notOk(mpi.isMpiError(null))
  t.notOk(mpi.isMpiError({ code: 'ERR_MPI_TRUNCATE' }))
  t.ok(mpiErrors.isMpiErrorCode('ERR_MPI_PROTOCOL'))
  t.notOk(mpiErrors.isMpiErrorCode('ERR_MPI_NONSENSE'))
  const wb = mpiErrors.wouldBlock({ id: 1 }, 'why')
  t.ok(mpi.isMpiError(wb, 'ERR_MPI_WOULD_BLOCK'))
  t.notOk(Object.keys(wb).includes('request'), 'the request is not enumerable')
  t.same(wb.request, { id: 1 })
  const p = mpiErrors.protocolError(3, 'length 4398046511104 above the bound')
  t.ok(mpi.isMpiError(p, 'ERR_MPI_PROTOCOL'))
  t.equal(p.rank, 3)
  t.match(p.message, /rank 3.*4398046511104/)
})
