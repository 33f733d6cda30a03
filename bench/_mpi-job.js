'use strict'
/**
 * Shared by the fastsock/mpi benches that time one pattern per job (bench/mpi-waits.js,
 * bench/mpi-exchange.js): a job of fresh ranks (two by default) on this host through fastsock's
 * own launcher.
 */

/**
 * Runs `node script ...args` as a job of `np` ranks (default 2) with `env` added to this
 * process's environment; resolves with the JSON object of the first line rank 0 printed that
 * starts with '{'. Rejects, naming `what`, when the job fails or rank 0 printed no such line.
 */
async function rankJob (script, args, env, what, np = 2) {
  const { spawnRanks } = require('../dist/internal')
  let out = null
  const job = await spawnRanks({
    np,
    command: process.execPath,
    args: [script, ...args],
    env: { ...process.env, ...env },
    stdio: 'pipe',
    prefix: false,
    onLine: (rank, stream, line) => { if (out === null && rank === 0 && stream === 'stdout' && line.startsWith('{')) out = JSON.parse(line) }
  })
  const res = await job.done
  if (res.code !== 0 || out === null) throw new Error(`${what}: the job failed (status ${res.code})`)
  return out
}

module.exports = { rankJob }
