'use strict'
// fastsock/mpi point-to-point, two ranks: ping-pong latency (RTT/2), windowed bandwidth (64
// isends per window, as osu_bw) and the 8 B message rate, as medians of per-iteration or
// per-window samples (robust on a shared machine). Used to pick the eager threshold
// (docs/mpi.md, "Thresholds"); the OSU-style comparison with Open MPI is `fastsock osu`.
//
//   npx fastsock mpirun -n 2 node bench/mpi-pingpong.js [--quick] [--tcp] [--lat 8,1024] [--bw 65536,1048576]
//
// Environment: FASTSOCK_MPI_EAGER_BYTES, FASTSOCK_MPI_SPIN_US (see docs/mpi.md).
const mpi = require('../dist/mpi')

const argv = process.argv.slice(2)
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt }
const quick = argv.includes('--quick')
const latSizes = opt('--lat', '0,8,64,1024,4096,16384,65536').split(',').filter(Boolean).map(Number)
const bwSizes = opt('--bw', '8,65536,262144,1048576,4194304').split(',').filter(Boolean).map(Number)

const median = a => { const s = Float64Array.from(a).sort(); return s[s.length >> 1] }

async function latency (comm, size) {
  const peer = 1 - comm.rank
  const buf = new Uint8Array(size)
  const iters = quick ? 500 : size >= 65536 ? 1000 : 10000
  const t = new Float64Array(iters)
  for (let i = -Math.min(1000, iters); i < iters; i++) {
    const t0 = process.hrtime.bigint()
    if (comm.rank === 0) { await comm.send(buf, peer, 1); await comm.recv(buf, peer, 1) } else { await comm.recv(buf, peer, 1); await comm.send(buf, peer, 1) }
    if (i >= 0) t[i] = Number(process.hrtime.bigint() - t0) / 2000
  }
  return median(t)
}

async function bandwidth (comm, size) {
  const peer = 1 - comm.rank
  const win = 64
  const bufs = Array.from({ length: win }, () => new Uint8Array(size))
  const ack = new Uint8Array(4)
  const windows = quick ? 10 : Math.max(10, Math.min(200, Math.floor(2e9 / (size * win + 1e6))))
  const rates = []
  for (let w = -2; w < windows; w++) {
    const t0 = process.hrtime.bigint()
    if (comm.rank === 0) {
      const reqs = new Array(win)
      for (let i = 0; i < win; i++) reqs[i] = comm.isend(bufs[i], peer, 2)
      await mpi.waitAll(reqs)
      await comm.recv(ack, peer, 3)
    } else {
      const reqs = new Array(win)
      for (let i = 0; i < win; i++) reqs[i] = comm.irecv(bufs[i], peer, 2)
      await mpi.waitAll(reqs)
      await comm.send(ack, peer, 3)
    }
    const s = Number(process.hrtime.bigint() - t0) / 1e9
    if (w >= 0) rates.push(win / s)
  }
  return median(rates) // messages per second
}

;(async () => {
  const comm = await mpi.init(argv.includes('--tcp') ? { transports: ['tcp'] } : {})
  if (comm.size !== 2) throw new Error('run with 2 ranks')
  await comm.sendrecv(new Uint8Array(1), 1 - comm.rank, 9, new Uint8Array(1), 1 - comm.rank, 9)
  const lines = [`# fastsock/mpi over ${comm.transportOf(1 - comm.rank)}, eager threshold ${process.env.FASTSOCK_MPI_EAGER_BYTES || mpi.DEFAULT_EAGER_BYTES} B`]
  for (const size of latSizes) lines.push(`latency ${size} B: ${(await latency(comm, size)).toFixed(2)} us`)
  for (const size of bwSizes) {
    const rate = await bandwidth(comm, size)
    lines.push(size <= 64 ? `rate ${size} B: ${(rate / 1e6).toFixed(3)} M msg/s` : `bandwidth ${size} B: ${(rate * size / 1e6).toFixed(0)} MB/s`)
  }
  if (comm.rank === 0) console.log(lines.join('\n'))
  await mpi.finalize()
})().catch(e => { console.error(e); process.exit(1) })
