'use strict'
// fastsock/mpi ranks over the `verbs` rung on a real kernel RDMA stack: run inside
// ../shared/tools/rdma-vm (npm run test:rdma) over rxe0 (RoCEv2) and, with
// FASTSOCK_TEST_RDMA_DEV=siw, over siw0 (iWARP). `fastsock mpirun`'s spawnRanks starts the ranks
// with MASTER_ADDR = the RDMA device's address, so each rank's store connection, and with it the
// address its endpoint card publishes, is on that device; init({ transports: ['verbs'] }) (the
// fixture's FSMPI_TRANSPORTS) makes the mesh verbs only. Checks comm.transportOf(peer) ===
// 'verbs' both ways and a Float64Array 0 → 1 → 0. Elsewhere skipped with the reason.
const t = require('tap')
const path = require('path')
const { rungHost, guestSkip } = require('../helpers/rungs')
const { spawnRanks } = require('../../dist/internal.js')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'launch-comm.js')
const SLOW = 240000 // the guest's CPU is emulated
const skip = guestSkip('verbs')

async function job (np) {
  const lines = []
  const env = { ...process.env, FSMPI_TRANSPORTS: 'verbs', FSMPI_TEST_TIMEOUT_MS: '180000' }
  for (const k of Object.keys(env)) if (/^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT)$/.test(k)) delete env[k]
  const ranks = await spawnRanks({ np, command: process.execPath, args: [FIXTURE], env, stdio: 'pipe', masterAddr: rungHost('verbs'), forwardSignals: false, timeoutMs: SLOW - 10000, onLine: (rank, stream, line) => lines.push({ rank, stream, line }) })
  const result = await ranks.done
  const outs = []
  for (const l of lines) {
    if (l.stream !== 'stdout') continue
    try { outs.push(JSON.parse(l.line)) } catch {}
  }
  return { result, outs: outs.filter(o => typeof o.rank === 'number').sort((a, b) => a.rank - b.rank), text: lines.map(l => `[${l.rank}] ${l.line}`).join('\n') }
}

for (const np of [2, 3]) {
  t.test(`${np} ranks, transports ['verbs']: transportOf says verbs`, { skip, timeout: SLOW }, async t => {
    const { result, outs, text } = await job(np)
    t.equal(result.code, 0, `the job exits 0\n${text}`)
    t.equal(outs.length, np, 'one line per rank')
    outs.forEach((o, rank) => {
      t.match(o, { rank, size: np })
      for (const [peer, transport] of Object.entries(o.transports)) t.equal(transport, 'verbs', `rank ${rank} → rank ${peer}`)
    })
    t.equal(outs[0] && outs[0].echoed, true, 'Float64Array 0 → 1 → 0 intact')
  })
}
