'use strict'
// A process holding shm connections forks (child_process.fork, and a child that lives on after
// the parent's connections close): the parent's connections carry on untouched, and the child's
// exit does not disturb them.
const t = require('tap')
const { fork } = require('child_process')
const { rungs, pair } = require('../helpers/rungs')
const { once, within } = require('../helpers/util')

t.test('fork while holding shm sockets', { skip: !rungs.includes('shm') && 'shm is not available here' }, async t => {
  const { client, serverSocket } = await pair('shm', { t })
  serverSocket.pipe(serverSocket)
  const roundTrip = async (n) => {
    const msg = Buffer.alloc(n, n & 0xff)
    const got = client.readInto(new Uint8Array(n))
    client.write(msg)
    const back = await within(got, 5000, 'echo')
    return Buffer.compare(Buffer.from(back.buffer, back.byteOffset, back.byteLength), msg) === 0
  }
  t.ok(await roundTrip(1000), 'echo before fork')
  const child = fork('-e', ['setTimeout(() => process.exit(0), 200)'], { execArgv: [] })
  t.ok(await roundTrip(200000), 'echo while the child lives')
  const [code] = await once(child, 'exit', 5000)
  t.equal(code, 0, 'child exited normally')
  t.ok(await roundTrip(3000), 'echo after the child exited')
  t.equal(client.destroyed, false, 'client still open')
  t.equal(serverSocket.destroyed, false, 'server side still open')
})
