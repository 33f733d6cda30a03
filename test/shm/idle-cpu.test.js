'use strict'
// An idle shm connection costs no CPU: nothing spins by default, and with in-loop polling
// (shmPollUs) the adaptive budget decays and the loop goes back to sleep.
const t = require('tap')
const { rungs, pair } = require('../helpers/rungs')
const { sleep } = require('../helpers/util')

const skip = !rungs.includes('shm') && 'shm is not available here'

async function idleCpuMs (ms) {
  const u0 = process.cpuUsage()
  await sleep(ms)
  const u = process.cpuUsage(u0)
  return (u.user + u.system) / 1000
}

for (const pollUs of [0, 50]) {
  t.test(`idle connection, shmPollUs ${pollUs}`, { skip }, async t => {
    const { client, serverSocket } = await pair('shm', { t, clientOptions: { shmPollUs: pollUs }, serverOptions: { shmPollUs: pollUs } })
    serverSocket.pipe(serverSocket)
    client.on('data', () => {})
    for (let i = 0; i < 50; i++) client.write('ping')
    await sleep(50) // let traffic (and any polling budget) die down
    const cpu = await idleCpuMs(500)
    // A spinning loop would burn ~500 ms of CPU here; a sleeping one, a few ms of timers/GC.
    t.ok(cpu < 50, `CPU over 500 ms idle: ${cpu.toFixed(1)} ms`)
  })
}
