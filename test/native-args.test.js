'use strict'
// The addon's one way to refuse an argument (csrc/errors.h): a TypeError with code
// ERR_INVALID_ARG_TYPE or a RangeError with code ERR_OUT_OF_RANGE, as Node's own bindings, from
// every file of csrc/ (each binding below lives in a different one); and no file of csrc/ but
// errors.cc builds a JS error itself.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { native } = require('../dist/native')

const typeError = { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }
const rangeError = { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }

t.test('bad arguments: errors with Node\'s codes', { skip: native ? false : 'no native addon' }, async t => {
  const cases = [
    ['closeFd("x") (addon.cc)', () => native.closeFd('x'), typeError],
    ['closeFd(-1) (addon.cc)', () => native.closeFd(-1), rangeError],
    ['connectAbstract(1) (addon.cc)', () => native.connectAbstract(1), typeError],
    ['memcpyTimeNs(-1, 1) (addon.cc)', () => native.memcpyTimeNs(-1, 1), rangeError],
    ['sendFds() (fdpass.cc)', () => native.sendFds(), typeError],
    ['recvFds(0, 0, 0) (fdpass.cc)', () => native.recvFds(0, 0, 0), rangeError],
    ['waitReadable(0, 1) without a callback (fdpass.cc)', () => native.waitReadable(0, 1), typeError],
    ['connectStream() (kernelsock.cc)', () => native.connectStream(), typeError],
    ['unsentBytes("x") (kernelsock.cc)', () => native.unsentBytes('x'), typeError],
    ['rsocketClose("x") (rdma/bridge.cc)', () => native.rsocketClose('x'), typeError],
    ['rdmaDeviceForAddress(1) (rdma/bridge.cc)', () => native.rdmaDeviceForAddress(1), typeError],
    ['isEventfd() (shm/endpoint.cc)', () => native.isEventfd(), typeError]
  ]
  for (const [what, call, expected] of cases) t.throws(call, expected, what)
})

t.test('csrc/ builds its JS errors in errors.cc only', async t => {
  const root = path.join(__dirname, '..', 'csrc')
  const offenders = []
  const walk = dir => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else if (/\.(cc|h)$/.test(e.name) && path.relative(root, p) !== 'errors.cc') {
        fs.readFileSync(p, 'utf8').split('\n').forEach((line, i) => {
          if (/Napi::(Type|Range)?Error::New\(/.test(line)) offenders.push(`${path.relative(root, p)}:${i + 1}`)
        })
      }
    }
  }
  walk(root)
  t.same(offenders, [], 'no Napi::Error::New / TypeError::New / RangeError::New outside csrc/errors.cc')
})
