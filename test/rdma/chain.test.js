'use strict'
// The chain between two fastsock processes in the RDMA guest (npm run test:rdma): with the
// same-host rungs taken out (FASTSOCK_TRANSPORTS=verbs,rsocket,smc,sdp,tcp: both processes share
// one guest, where shm rightly wins otherwise) the chain reaches verbs on its own through the
// RDMA device's address; with FASTSOCK_TRANSPORTS naming one rung, it picks rsocket, smc and tcp
// in turn. Both ends report the rung, and a message is echoed through it.
const t = require('tap')
const { availability } = require('../helpers/rungs')
const { spawnNode } = require('../helpers/util')

const RDMA_IP = process.env.RDMAVM_IP
const SMC_IP = process.env.RDMAVM_SMC_IP
const SLOW = 60000 // the guest's CPU is emulated

const cases = [
  { chain: 'verbs,rsocket,smc,sdp,tcp', host: RDMA_IP, want: 'verbs' },
  { chain: 'rsocket', host: RDMA_IP, want: 'rsocket' },
  { chain: 'smc', host: SMC_IP, want: 'smc' },
  { chain: 'tcp', host: RDMA_IP, want: 'tcp' }
]

for (const c of cases) {
  const a = availability.find(r => r.name === c.want)
  const skip = !process.env.RDMAVM ? 'needs the RDMA guest (npm run test:rdma)'
    : !c.host ? `no address for ${c.want} (RDMAVM_IP / RDMAVM_SMC_IP unset)`
      : !a.available ? `${c.want} is not available: ${a.reason}` : false
  t.test(`FASTSOCK_TRANSPORTS=${c.chain}: two processes pick ${c.want}`, { skip, timeout: SLOW }, async t => {
    const env = { FASTSOCK_TRANSPORTS: c.chain }
    const server = spawnNode(t, ['test/fixtures/server.js'], { env: { ...env, FASTSOCK_TEST_LISTEN_HOST: '0.0.0.0' } })
    const { port } = await server.waitFor(m => m.event === 'listening', SLOW)
    const text = `ping over ${c.want}`
    const client = spawnNode(t, ['test/fixtures/client.js', JSON.stringify({ host: c.host, port, write: text, transportTimeoutMs: 20000 })], { env })
    const connected = await client.waitFor(m => m.event === 'connect' || m.event === 'error', SLOW)
    t.equal(connected.transport, c.want, `the client picked ${c.want}`)
    const accepted = await server.waitFor(m => m.event === 'connection', SLOW)
    t.equal(accepted.transport, c.want, `the server side is on ${c.want} too`)
    if (c.want === 'smc') {
      t.equal(connected.smcMode, 'SMCR', 'smc_diag: the client runs SMC-R')
      t.equal(accepted.smcMode, 'SMCR', 'smc_diag: the server runs SMC-R')
    }
    const echoed = await client.waitFor(m => m.event === 'data', SLOW)
    t.equal(echoed.text, text, 'echoed through the server')
  })
}
