'use strict'
// Typed errors (lib/errors.ts): every ERR_FASTSOCK_* code the addon (csrc/) or the library
// (lib/) can throw is in FASTSOCK_ERROR_CODES, the list the FastsockErrorCode union is made of;
// each error class has its fixed code and name.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const errors = require('../dist/errors.js')

const root = path.join(__dirname, '..')

function filesUnder (dir, re) {
  const out = []
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) out.push(...filesUnder(p, re))
    else if (re.test(e.name)) out.push(p)
  }
  return out
}

function codesIn (files) {
  const found = new Map()
  for (const f of files) {
    for (const m of fs.readFileSync(f, 'utf8').matchAll(/ERR_FASTSOCK_[A-Z_]+/g)) {
      if (!found.has(m[0])) found.set(m[0], path.relative(root, f))
    }
  }
  return found
}

t.test('every code in csrc/ is in the union', async t => {
  const files = filesUnder(path.join(root, 'csrc'), /\.(cc|h)$/)
  t.ok(files.length > 0, 'csrc/ has sources')
  const found = codesIn(files)
  t.ok(found.size > 0, `csrc/ throws ERR_FASTSOCK_* codes (${[...found.keys()].join(', ')})`)
  for (const [code, file] of found) t.ok(errors.FASTSOCK_ERROR_CODES.includes(code), `${code} (${file}) is in FASTSOCK_ERROR_CODES`)
})

t.test('every code in lib/ is in the union', async t => {
  const found = codesIn(filesUnder(path.join(root, 'lib'), /\.ts$/))
  for (const [code, file] of found) t.ok(errors.FASTSOCK_ERROR_CODES.includes(code), `${code} (${file}) is in FASTSOCK_ERROR_CODES`)
})

t.test('the union is what errors.ts declares', async t => {
  const src = fs.readFileSync(path.join(root, 'lib', 'errors.ts'), 'utf8')
  t.match(src, /export type FastsockErrorCode = typeof FASTSOCK_ERROR_CODES\[number\]/, 'FastsockErrorCode is built from the exported list')
  t.equal(new Set(errors.FASTSOCK_ERROR_CODES).size, errors.FASTSOCK_ERROR_CODES.length, 'no code twice')
})

t.test('one class per failure, with a fixed code and name', async t => {
  const cases = [
    [new errors.NotOfferedError('x'), 'ERR_FASTSOCK_NOT_OFFERED'],
    [new errors.AttemptTimeoutError('x'), 'ERR_FASTSOCK_TRANSPORT_TIMEOUT'],
    [new errors.HandshakeError('x'), 'ERR_FASTSOCK_HANDSHAKE'],
    [new errors.RejectedError(4, 'x'), 'ERR_FASTSOCK_REJECTED'],
    [new errors.ServerBusyError(2, 'x'), 'ERR_FASTSOCK_REJECTED'],
    [new errors.UnverifiedPeerError('x'), 'ERR_FASTSOCK_UNVERIFIED_PEER'],
    [new errors.ReadIntoError('x', 3), 'ERR_FASTSOCK_READINTO'],
    [new errors.UnknownTransportError('x'), 'ERR_FASTSOCK_UNKNOWN_TRANSPORT'],
    [new errors.SyncUnavailableError('x'), 'ERR_FASTSOCK_SYNC_UNAVAILABLE'],
    [new errors.ShmOnlyError('x'), 'ERR_FASTSOCK_SHM_ONLY'],
    [new errors.StaleLoanError('x'), 'ERR_FASTSOCK_STALE_LOAN'],
    [new errors.NotTransferableError('x'), 'ERR_FASTSOCK_NOT_TRANSFERABLE']
  ]
  for (const [e, code] of cases) {
    t.equal(e.code, code, `${e.constructor.name}: ${code}`)
    t.equal(e.name, 'FastsockError', `${e.constructor.name}: name`)
    t.ok(e instanceof errors.FastsockError, `${e.constructor.name} is a FastsockError`)
    t.ok(errors.FASTSOCK_ERROR_CODES.includes(e.code), `${code} is listed`)
  }
  t.equal(new errors.RejectedError(4, 'x').reason, 4, 'RejectedError carries its reason')
  t.equal(new errors.ReadIntoError('x', 3).bytesRead, 3, 'ReadIntoError carries bytesRead')
  const agg = new errors.AllTransportsFailedError([new Error('a')], 'none')
  t.ok(agg instanceof AggregateError, 'the all-failed error is an AggregateError')
  t.equal(agg.code, 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED')
  t.equal(agg.errors.length, 1)
})

t.test('classification by class', async t => {
  const refused = errors.unserved(-111, 'connect', '10.0.0.1:7')
  t.equal(refused.code, 'ECONNREFUSED', 'UnservedError keeps the system code')
  t.equal(refused.message, 'connect ECONNREFUSED 10.0.0.1:7', "and errnoError's message")
  t.equal(refused.notOffered, true)
  t.ok(errors.isNotOffered(refused), 'unserved: not offered')
  t.ok(errors.isNotOffered(new errors.NotOfferedError('x')), 'NotOfferedError: not offered')
  t.notOk(errors.isNotOffered(errors.errnoError(-111, 'connect')), 'a plain system error is a failure')
  t.notOk(errors.isNotOffered(new errors.HandshakeError('x')), 'a handshake error is a failure')
  const { negativeTtlMs, NOT_OFFERED_TTL_MS, FAILURE_TTL_MS } = require('../dist/negative-cache.js')
  t.equal(negativeTtlMs(new errors.ServerBusyError(2, 'busy')), 0, 'busy: not cached')
  t.equal(negativeTtlMs(refused), NOT_OFFERED_TTL_MS, 'not offered: cached briefly')
  t.equal(negativeTtlMs(new errors.RejectedError(3, 'no')), FAILURE_TTL_MS, 'rejected: cached longer')
})

t.test('a malformed frame is a HandshakeError', async t => {
  const wire = require('../dist/wire.js')
  const bad = Buffer.alloc(8, 0x58) // 'XXXXXXXX': wrong magic
  let caught = null
  try { wire.decode(bad) } catch (err) { caught = err }
  t.ok(caught instanceof errors.HandshakeError, 'instanceof HandshakeError')
  t.throws(() => wire.decode(bad), { code: 'ERR_FASTSOCK_HANDSHAKE', name: 'FastsockError' })
})

t.test('errno numbers come from one place (os.constants.errno)', async t => {
  const os = require('os')
  for (const name of ['EAGAIN', 'EPROTO', 'ETIMEDOUT', 'ECONNREFUSED', 'ENOENT', 'EMFILE', 'ENFILE', 'ECONNRESET', 'EPIPE', 'EIO']) {
    t.equal(errors.ERRNO[name], -os.constants.errno[name], `ERRNO.${name} is -os.constants.errno.${name}`)
  }
  const own = filesUnder(path.join(root, 'lib'), /\.ts$/).filter(f => !/lib\/(cli|mpi)\//.test(f))
  for (const f of own) {
    const src = fs.readFileSync(f, 'utf8')
    t.notMatch(src, /\bconst E[A-Z]+ = -\d+/, `${path.relative(root, f)} defines no errno number of its own`)
    t.notMatch(src, /(===|!==) -(2|5|11|23|24|32|71|104|110|111)\b/, `${path.relative(root, f)} compares with no bare errno number`)
  }
})
