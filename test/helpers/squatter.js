'use strict'
// Starts test/fixtures/squatter.js (a second process holding a side-channel name) and
// test/fixtures/fake-server.js (a process owning both a TCP port and its side channel).
const path = require('path')
const { spawnNode } = require('./util')
const { channelName } = require('../../dist/sidechannel/names.js')

const SQUATTER = path.join(__dirname, '..', 'fixtures', 'squatter.js')
const FAKE_SERVER = path.join(__dirname, '..', 'fixtures', 'fake-server.js')

/**
 * Binds the side-channel name of `address`:`port` in a child process before anyone else.
 * Returns the child handle plus `report()`: { connections, bytes } seen so far.
 */
async function squat (t, address, port, mode = 'silent') {
  const name = channelName(address, port)
  const proc = spawnNode(t, [SQUATTER, name, mode])
  await proc.waitFor(m => m.event === 'listening')
  let nextId = 1
  return {
    ...proc,
    name,
    async report () {
      const id = nextId++
      proc.child.stdin.write(`report ${id}\n`)
      const r = await proc.waitFor(m => m.event === 'report' && m.id === id)
      return { connections: r.connections, bytes: r.bytes }
    }
  }
}

/** Starts the fake server in `mode`; resolves with { port, name, ...child handle }. */
async function fakeServer (t, mode) {
  const proc = spawnNode(t, [FAKE_SERVER, mode])
  const { port, name } = await proc.waitFor(m => m.event === 'listening')
  return { ...proc, port, name }
}

module.exports = { squat, fakeServer, channelName }
