'use strict'
// Round trips against test/fixtures/poll-peer.js, the echo server of the polling tests.
const { within } = require('./util')

const MESSAGE_BYTES = 64

/**
 * `n` round trips of one 64-byte message over `c`, each echo checked byte for byte; `kind` is
 * the fixture's first byte: 'e' (answered at once), 'l' (after the fixture's lateMs, 5 ms by
 * default), 'w' (after 50 µs of work).
 * Rejects on a differing echo, an error on `c`, or after `timeoutMs`.
 */
function roundTrips (c, n, kind = 'e', timeoutMs = 20000) {
  return within(new Promise((resolve, reject) => {
    const msg = Buffer.alloc(MESSAGE_BYTES, kind)
    let left = n
    let pending = Buffer.alloc(0)
    const onData = d => {
      pending = pending.length === 0 ? d : Buffer.concat([pending, d])
      while (pending.length >= MESSAGE_BYTES) {
        if (!pending.subarray(0, MESSAGE_BYTES).equals(msg)) return reject(new Error('the echo differs from the message'))
        pending = pending.subarray(MESSAGE_BYTES)
        if (--left === 0) {
          c.off('data', onData)
          c.off('error', reject)
          return resolve()
        }
        c.write(msg)
      }
    }
    c.on('data', onData)
    c.once('error', reject)
    c.write(msg)
  }), timeoutMs, `${n} round trips (${kind})`)
}

module.exports = { roundTrips, MESSAGE_BYTES }
