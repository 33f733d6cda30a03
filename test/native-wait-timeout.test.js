'use strict'
// waitReadable's timeout counts from the call, not from the start of the loop turn: after a long
// synchronous stretch (a slow start-up, an emulated CPU) libuv's cached loop time lags, and a
// timer armed on it fired early by that much (under qemu-user the side-channel handshake's 1 s
// wait fired after a few ms, and every fast rung failed).
const t = require('tap')
const { native } = require('../dist/native')

t.test('waitReadable waits its whole timeout after the loop was blocked', { skip: !native && 'no native addon' }, async t => {
  const name = `fastsock-test-wait-${process.pid}`
  const l = native.listenAbstract(name, 8)
  const c = native.connectAbstract(name)
  t.teardown(() => { native.closeFd(c); native.closeFd(l) })
  await new Promise(resolve => setImmediate(resolve)) // a fresh loop turn: loop time now
  const blockUntil = Date.now() + 300
  while (Date.now() < blockUntil) {} // the loop's cached time now lags by 300 ms
  const t0 = Date.now()
  const status = await new Promise(resolve => native.waitReadable(c, 500, resolve))
  const waited = Date.now() - t0
  t.equal(status, -110, 'the wait ended by its timeout (-ETIMEDOUT): nothing was readable')
  t.ok(waited >= 450, `it waited its 500 ms, not 500 ms minus the blocked 300 (waited ${waited} ms)`)
})
