'use strict'
// The addon's thrown errors carry `code` (csrc/errors.h): for a failed system call the errno's
// name as Node spells it, with `errno` (negative) and `syscall`, as Node's own system errors; for
// a failure of fastsock's own an ERR_FASTSOCK_* code. Each case provokes the error through the
// real addon and a real kernel object.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const util = require('util')
const { native } = require('../dist/native')

// A system error as Node shapes it: code is the name of errno, syscall is the failing call.
function isSystemError (t, err, syscall, code) {
  t.type(err, Error, 'an Error is thrown')
  t.type(err.code, 'string', `code is set (${err.message})`)
  t.ok(Number.isInteger(err.errno) && err.errno < 0, `errno is a negative integer (${err.errno})`)
  t.equal(err.code, util.getSystemErrorName(err.errno), 'code is the name of errno')
  if (code) t.equal(err.code, code, `code is ${code}`)
  if (syscall) t.equal(err.syscall, syscall, `syscall is ${syscall}`)
  else t.type(err.syscall, 'string', 'syscall is set')
}

function thrown (fn) {
  try {
    fn()
  } catch (err) {
    return err
  }
  return null
}

t.test('listenAbstract on a name already bound: EADDRINUSE from listen', { skip: native ? false : 'no native addon' }, async t => {
  const name = `fastsock-native-errors-${process.pid}-${Date.now()}`
  const fd = native.listenAbstract(name, 4)
  t.teardown(() => native.closeFd(fd))
  const err = thrown(() => native.listenAbstract(name, 4))
  isSystemError(t, err, 'listen', 'EADDRINUSE')
  t.equal(err.errno, -os.constants.errno.EADDRINUSE, 'errno is -EADDRINUSE')
})

t.test('peerCred on a file, not a socket: ENOTSOCK from getsockopt', { skip: native ? false : 'no native addon' }, async t => {
  const fd = fs.openSync(__filename, 'r')
  t.teardown(() => fs.closeSync(fd))
  isSystemError(t, thrown(() => native.peerCred(fd)), 'getsockopt', 'ENOTSOCK')
})

t.test('waitReadable on a regular file, which epoll refuses: an error from uv_poll_init', { skip: native ? false : 'no native addon' }, async t => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-native-errors-'))
  const file = path.join(dir, 'plain')
  fs.writeFileSync(file, 'x')
  const fd = fs.openSync(file, 'r')
  t.teardown(() => {
    fs.closeSync(fd)
    fs.rmSync(dir, { recursive: true, force: true })
  })
  let called = false
  const err = thrown(() => native.waitReadable(fd, 1000, () => { called = true }))
  isSystemError(t, err, 'uv_poll_init')
  t.equal(err.code, 'EPERM', 'epoll_ctl says EPERM for a regular file')
  await new Promise(resolve => setImmediate(resolve))
  t.notOk(called, 'the callback never runs when the wait could not start')
})

t.test('RDMA listeners on an address no RDMA device has: a system error, or ERR_FASTSOCK_NO_RDMA without rdma-core', {
  skip: native ? false : 'no native addon'
}, async t => {
  const probe = native.rdmaProbe()
  const address = '192.0.2.1' // TEST-NET-1: never an address of this host
  const listeners = {
    // absent when the addon was built without rdma-core headers
    verbs: typeof native.VerbsListener === 'function' ? () => new native.VerbsListener(address, 7, 7, 1, {}, () => {}) : null,
    rsocket: () => native.rsocketListen(address, 7, 1, () => {})
  }
  for (const [rung, listen] of Object.entries(listeners)) {
    if (!listen) {
      t.comment(`${rung}: not built here`)
      continue
    }
    const err = thrown(listen)
    if (!probe.loaded || (rung === 'rsocket' && !probe.rsocket)) {
      t.equal(err?.code, 'ERR_FASTSOCK_NO_RDMA', `${rung}: rdma-core (${probe.error || 'its rsocket API'}) is absent: ERR_FASTSOCK_NO_RDMA`)
    } else {
      t.test(rung, async t => isSystemError(t, err))
    }
  }
})
