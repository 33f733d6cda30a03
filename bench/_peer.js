'use strict'
/**
 * Shared by bench/late-peer.js and bench/idle.js: starts bench/_echo-peer.js in its own process
 * (`kind` 'net' or 'fastsock', replies after `delayMs`) and returns { port, cpuUs(), close() },
 * cpuUs() resolving with the peer's CPU time (µs) since the previous call.
 */
const { spawn } = require('child_process')
const path = require('path')
const readline = require('readline')

module.exports = async function startPeer (kind, delayMs) {
  const child = spawn(process.execPath, [path.join(__dirname, '_echo-peer.js'), kind, String(delayMs)], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = readline.createInterface({ input: child.stdout })
  const next = () => new Promise(resolve => lines.once('line', l => resolve(JSON.parse(l))))
  const { port } = await next()
  return {
    port,
    cpuUs: async () => { const r = next(); child.stdin.write('cpu\n'); return (await r).cpuUs },
    close: () => new Promise(resolve => { child.once('exit', resolve); child.stdin.end() })
  }
}
