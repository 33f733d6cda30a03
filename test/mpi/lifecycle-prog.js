'use strict'
// A rank of test/mpi/lifecycle.test.js: `node lifecycle-prog.js <scenario>`, run by a launcher.
// Prints `DONE <rank> <ms since epoch>` when its program is done (before any finalize).
const mpi = require('../../dist/mpi')
const scenario = process.argv[2]
const done = rank => console.log(`DONE ${rank} ${Date.now()}`)

async function main () {
  if (scenario === 'never-init') { // rank 2 never calls init; the others give up after 3 s
    if (process.env.RANK === '2') return
    try { await mpi.init({ timeoutMs: 3000 }) } catch (err) { console.log(`INIT ${err.code} ${err.message}`); process.exitCode = 2 }
    return
  }
  const comm = await mpi.init(scenario === 'no-abort' ? { abortOnError: false } : {})
  const a = new Float64Array(1)
  switch (scenario) {
    case 'forget': // no finalize: exits by itself
      if (comm.rank === 0) await comm.send(new Float64Array([42]), 1, 1)
      else if (comm.rank === 1) await comm.recv(a, 0, 1)
      await comm.barrier()
      done(comm.rank)
      return
    case 'slow-recv': // rank 1 waits 3 s for rank 0's message, with nothing else in its loop
      if (comm.rank === 0) { await new Promise(resolve => setTimeout(resolve, 3000)); await comm.send(new Float64Array([7]), 1, 1) }
      else if (comm.rank === 1) { await comm.recv(a, 0, 1); console.log(`GOT ${a[0]}`) }
      done(comm.rank)
      return
    case 'drain': { // rank 1 awaits a message rank 0 sends after 600 ms of synchronous work (no timer in either loop)
      let drains = 0
      process.on('beforeExit', () => { drains++ })
      await comm.barrier() // the connections are up (a connect in progress holds the loop by itself)
      if (comm.rank === 0) { const end = Date.now() + 600; while (Date.now() < end); await comm.send(new Float64Array([9]), 1, 1) }
      else if (comm.rank === 1) { await comm.recv(a, 0, 1); console.log(`DRAINS ${drains} GOT ${a[0]}`) }
      done(comm.rank)
      return
    }
    case 'caught': // rank 1 throws, the error is caught and logged; the others wait for it in a barrier
      if (comm.rank === 1) throw new Error('boom in rank 1')
      await comm.barrier()
      done(comm.rank)
      return
    case 'caught-recv': // as caught, the others wait for a message from rank 1
      if (comm.rank === 1) throw new Error('boom in rank 1')
      await comm.recv(a, 1, 5)
      done(comm.rank)
      return
    case 'uncaught': case 'no-abort': // rank 1 throws, nobody catches
      if (comm.rank === 1) setTimeout(() => { throw new Error('boom in rank 1') }, 10)
      else await comm.barrier()
      return
    case 'rejection': // rank 2 leaves a rejected promise unhandled
      if (comm.rank === 2) Promise.reject(new RangeError('bad thing in rank 2'))
      else await comm.barrier()
      return
    case 'skip-barrier': // the last rank skips the last barrier and finalizes
      await comm.barrier()
      if (comm.rank !== comm.size - 1) {
        try { await comm.barrier() } catch (err) { console.log(`REJECTED ${comm.rank} ${err.code} ${Date.now()} ${err.message}`) }
      }
      done(comm.rank)
      await mpi.finalize()
      return
    case 'object': { // the object tier: recvObject's Status, sendObject's coded error
      try { comm.sendObject({ f () {} }, (comm.rank + 1) % comm.size, 3) } catch (err) { console.log(`SEND ${err.code} ${err.name} ${err.cause ? 'cause' : 'nocause'}`) }
      if (comm.rank === 0) await comm.sendObject({ m: new Map([[1, 'x']]) }, 1, 4)
      if (comm.rank === 1) {
        const { value, status } = await comm.recvObject(mpi.ANY_SOURCE, mpi.ANY_TAG, { status: true })
        console.log(`RECV ${value.m.get(1)} source=${status.source} tag=${status.tag} count=${status.count > 0}`)
      }
      done(comm.rank)
      await mpi.finalize()
      return
    }
    case 'after-finalize': {
      await mpi.finalize()
      const x = new Float64Array(1)
      for (const f of [() => mpi.init(), () => mpi.world(), () => comm.send(x, (comm.rank + 1) % comm.size, 1), () => comm.recv(x), () => comm.allreduce(x, new Float64Array(1), mpi.SUM), () => comm.barrierSync()]) {
        try { await f(); console.log('NO ERROR') } catch (err) { console.log(`AFTER ${err.code}`) }
      }
      done(comm.rank)
      return
    }
    case 'finalize-wait': // rank 0 finalizes, rank 1 keeps computing 3 s: rank 0 reports after its bound
      if (comm.rank === 1) await new Promise(resolve => setTimeout(resolve, 3000))
      done(comm.rank)
      await mpi.finalize()
      return
    default:
      throw new Error(`unknown scenario ${scenario}`)
  }
}
const p = main()
if (scenario === 'caught' || scenario === 'caught-recv') p.catch(console.error)
