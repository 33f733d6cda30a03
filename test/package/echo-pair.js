'use strict'
// Runs test/package/echo-peer.js twice, server then client, as two real processes (under
// qemu-user for the arm64 smoke test), and collects what each printed.
const path = require('path')
const { spawn } = require('child_process')

/** The peer script, to copy where fastsock should be resolved from. */
const PEER = path.join(__dirname, 'echo-peer.js')

/**
 * Starts `command(['<peer>', 'server', rung])`, waits for its port, runs the client, and resolves
 * with { server, client, served } (the JSON lines they printed: listening, echoed, served).
 * `command(args)` returns [file, argv]: `node` itself or an emulator running node. Rejects when a
 * peer exits without its line or `timeoutMs` passes; both processes are gone when it settles.
 */
async function echoPair ({ command, peer = PEER, cwd, env, rung, esmClient = false, timeoutMs = 120000 }) {
  const children = []
  const start = (args) => {
    const [file, argv] = command([peer, ...args])
    const child = spawn(file, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    const lines = []
    let stderr = ''
    let buf = ''
    const waiters = []
    child.stdout.on('data', d => {
      buf += d
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 1)
        try { lines.push(JSON.parse(line)) } catch { stderr += `(stdout) ${line}\n` }
        waiters.forEach(w => w())
      }
    })
    child.stderr.on('data', d => { stderr += d })
    const exited = new Promise(resolve => child.on('exit', (code, signal) => { waiters.forEach(w => w()); resolve({ code, signal }) }))
    const line = (pred, what) => new Promise((resolve, reject) => {
      const check = () => {
        const hit = lines.find(pred)
        if (hit !== undefined) return resolve(hit)
        if (child.exitCode !== null || child.signalCode !== null) {
          reject(new Error(`${args[0]} exited (${child.exitCode ?? child.signalCode}) before ${what}: ${JSON.stringify(lines)} ${stderr.trim()}`))
        }
      }
      waiters.push(check)
      check()
    })
    return { line, exited, lines, stderr: () => stderr }
  }
  let timer
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`echo over ${rung}: no result within ${timeoutMs} ms`)), timeoutMs)
  })
  try {
    return await Promise.race([timeout, (async () => {
      const srv = start(['server', rung])
      const server = await srv.line(m => 'port' in m || 'error' in m, 'listening')
      if (server.error) throw new Error(`server: ${server.error}`)
      const cli = start(['client', rung, String(server.port), ...(esmClient ? ['esm'] : [])])
      const client = await cli.line(m => 'transport' in m || 'error' in m, 'the echo')
      const served = await srv.line(m => 'served' in m || 'error' in m, 'served')
      await Promise.all([srv.exited, cli.exited])
      return { server, client, served }
    })()])
  } finally {
    clearTimeout(timer)
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  }
}

module.exports = { echoPair, PEER }
