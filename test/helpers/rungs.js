'use strict'
// The rungs a conformance file runs against, and a connected pair forced onto one rung.
//
//   const { forEachRung, pair } = require('../helpers/rungs')
//   forEachRung(t, async (t, rung) => {
//     const { client, serverSocket } = await pair(rung, { t })
//     ...
//   })
//
// Every rung of the chain gets a subtest: the ones this host offers run, the others are listed
// as skipped with the reason fastsock.transports() gives.
const assert = require('assert')
const fastsock = require('../..')
const { once, within, listen } = require('./util')

const all = fastsock.transports()
// FASTSOCK_TEST_RUNGS=unix,tcp restricts the conformance run to those rungs (others: skipped).
const selected = process.env.FASTSOCK_TEST_RUNGS ? process.env.FASTSOCK_TEST_RUNGS.split(',').map(s => s.trim()) : null
const excluded = a => selected !== null && !selected.includes(a.name)
/** Names of the rungs available here (and selected), in chain order. */
const rungs = all.filter(a => a.available && !excluded(a)).map(a => a.name)
const ALL_RUNGS = all.map(a => a.name)
/** The rung the full chain lands on between two fastsock ends on this host. */
const bestRung = all.find(a => a.available).name

/**
 * Runs `fn(t, rung)` as one subtest per rung; unavailable rungs are skipped with their reason.
 * `timeout` (ms) bounds each subtest. `loopback: true`: the test dials a loopback address by
 * hand, so the cross-host rungs (verbs, rsocket) are skipped. `skip`: { rung: reason } for
 * rungs that cannot take part in this subtest.
 */
function forEachRung (t, fn, { timeout = 30000, only, loopback = false, skip = {} } = {}) {
  for (const a of all) {
    let opts
    if (!a.available) opts = { skip: `${a.name} is not available here: ${a.reason}` }
    else if (excluded(a)) opts = { skip: `${a.name} excluded by FASTSOCK_TEST_RUNGS` }
    else if (only && !only.includes(a.name)) opts = { skip: `not applicable to ${a.name}` }
    else if (skip[a.name]) opts = { skip: skip[a.name] }
    else if (loopback && CROSS_HOST.has(a.name)) opts = { skip: `dials loopback by hand; ${a.name} serves RDMA device addresses only (test/rdma covers it)` }
    else opts = { timeout }
    t.test(`rung ${a.name}`, opts, t => fn(t, a.name))
  }
}

/**
 * Where the cross-host rungs are tested: the address of the RDMA device to dial (inside
 * ../shared/tools/rdma-vm: RDMAVM_IP = rxe0's 10.0.0.1, or siw0's RDMAVM_SIW_IP when
 * FASTSOCK_TEST_RDMA_DEV=siw), and for smc the address SMC-R serves (RDMAVM_SMC_IP). Servers
 * for these rungs listen on every interface, as a real server would.
 */
const RDMA_IP = process.env.FASTSOCK_TEST_RDMA_DEV === 'siw' ? process.env.RDMAVM_SIW_IP : process.env.RDMAVM_IP
/** Rungs that need an RDMA device's address: no loopback. */
const CROSS_HOST = new Set(['verbs', 'rsocket'])
const REMOTE_HOSTS = {
  verbs: RDMA_IP,
  rsocket: RDMA_IP,
  smc: process.env.RDMAVM_SMC_IP || RDMA_IP
}
/** The address a client on `rung` dials by default (null: the rung's usual local address). */
function rungHost (rung) {
  return REMOTE_HOSTS[rung] || null
}

/**
 * Why a test of a cross-host `rung` against the RDMA guest's address must skip here (a string),
 * or false when it can run: outside the guest, the rung unavailable, or no address for it.
 */
function guestSkip (rung) {
  const a = all.find(x => x.name === rung)
  return !process.env.RDMAVM ? 'needs the RDMA guest (npm run test:rdma)'
    : !a.available ? `${rung} is not available: ${a.reason}`
      : !rungHost(rung) ? 'RDMAVM_IP is not set' : false
}

/** The address a test dials for `rung` by hand: the rung's own (rungHost) or loopback. */
function dialHost (rung) {
  return rungHost(rung) || '127.0.0.1'
}

/** The address a client dials to reach a server listening on `listenHost`. */
function dialFor (listenHost) {
  if (listenHost === undefined || listenHost === '0.0.0.0' || listenHost === '::') return '127.0.0.1'
  return listenHost
}

/**
 * Starts a fastsock server (offering every rung unless serverOptions.transports says otherwise)
 * and connects a fastsock client forced onto `rung` (`transports: [rung]`). Asserts that both
 * ends report `transport === rung`. Returns { server, client, serverSocket, port, close }.
 * With `t`, everything is closed at teardown; otherwise call `close()`.
 * `listenOptions` (merged into `{ port: 0, host: listenHost }`) makes the server listen with an
 * options object. `onConnection(socket)` runs synchronously in the server's 'connection' event.
 */
async function pair (rung, { serverOptions = {}, clientOptions = {}, listenHost, listenOptions, connectHost, t, onConnection, connectTimeoutMs = 5000 } = {}) {
  if (listenHost === undefined) listenHost = rungHost(rung) ? '0.0.0.0' : '127.0.0.1'
  if (connectHost === undefined && rungHost(rung)) connectHost = rungHost(rung)
  // The emulated CPU of the RDMA guest makes connection set-up slow: give each rung its time.
  if (rungHost(rung)) clientOptions = { transportTimeoutMs: 20000, ...clientOptions }
  if (rungHost(rung)) connectTimeoutMs = Math.max(connectTimeoutMs, 30000)
  const server = fastsock.createServer({ transports: ALL_RUNGS, ...serverOptions })
  const accepted = []
  const gotConnection = new Promise(resolve => {
    server.on('connection', s => {
      accepted.push(s)
      s.on('error', () => {}) // tests that care listen themselves
      if (onConnection) onConnection(s)
      resolve(s)
    })
  })
  const close = async () => {
    for (const s of accepted) s.destroy()
    if (client) client.destroy()
    if (server.listening) await within(new Promise(resolve => server.close(resolve)), 5000, 'server close')
  }
  let client = null
  if (t) t.teardown(close)
  if (listenOptions) {
    await new Promise((resolve, reject) => server.once('error', reject).listen({ port: 0, host: listenHost, ...listenOptions }, resolve))
  } else {
    await listen(server, 0, listenHost)
  }
  const port = server.address().port
  client = fastsock.connect({ port, host: connectHost ?? dialFor(listenHost), transports: [rung], ...clientOptions })
  const failed = once(client, 'error', connectTimeoutMs + 1000).then(([err]) => { throw err }, () => {})
  const [serverSocket] = await within(Promise.race([
    Promise.all([gotConnection, once(client, 'connect', connectTimeoutMs)]),
    failed
  ]), connectTimeoutMs, `a ${rung} connection`)
  assert.strictEqual(client.transport, rung, `client transport is ${client.transport}, expected ${rung}`)
  assert.strictEqual(serverSocket.transport, rung, `server-side transport is ${serverSocket.transport}, expected ${rung}`)
  return { server, client, serverSocket, port, close, accepted }
}

module.exports = { fastsock, rungs, bestRung, ALL_RUNGS, availability: all, forEachRung, pair, dialFor, rungHost, dialHost, guestSkip }
