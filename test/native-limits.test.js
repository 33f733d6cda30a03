'use strict'
// The native floors that bench/ and fastsock-tools print beside fastsock's figures, as
// fastsock/internal exports them: a cache-line ping-pong and a ping-pong over two shm rings with
// the synchronous pair's protocol (csrc/native_limits.cc). They must finish (a protocol that lost
// a message would spin forever: tap's timeout fails the test) and refuse what they cannot do. No
// timing is asserted.
const t = require('tap')
const { floors: native, floorsUnavailable } = require('../dist/internal')

t.test('ringPingPongNs: round trips of every allowed size over two rings', { skip: !native && floorsUnavailable }, async t => {
  for (const bytes of [1, 64, 4096]) {
    // 4096 B x 2000 round trips wraps each 64 KiB ring 125 times.
    const ns = native.ringPingPongNs(2000, bytes)
    t.ok(Number.isFinite(ns) && ns > 0, `${bytes} B: ${(ns / 2000 / 2).toFixed(0)} ns RTT/2`)
  }
})

t.test('ringPingPongNs refuses sizes it cannot carry, and bad arguments', { skip: !native && floorsUnavailable }, async t => {
  for (const bytes of [0, 3, 8192]) t.equal(native.ringPingPongNs(10, bytes), 0, `${bytes} B -> 0`)
  t.throws(() => native.ringPingPongNs(10), TypeError)
  t.throws(() => native.ringPingPongNs('10', 64), TypeError)
})

t.test('spinPingPongNs: a cache line back and forth', { skip: !native && floorsUnavailable }, async t => {
  const ns = native.spinPingPongNs(2000)
  t.ok(Number.isFinite(ns) && ns > 0, `${(ns / 2000 / 2).toFixed(0)} ns RTT/2`)
})
