#!/usr/bin/env node
'use strict'
// npm run test:arm64: proves prebuilds/linux-arm64/fastsock.napi.node, as committed, loads on
// arm64 and carries data: an echo of 3 MiB over shm and over unix between two processes, both
// Debian's arm64 node running under qemu-user, with only prebuilds/ allowed (PREBUILDS_ONLY=1).
// The tools come from Debian's apt (scripts/qemu-arm64.js: qemu-user, and nodejs:arm64 extracted
// into a sysroot); without apt (not Debian, not root) it says so and skips. Debian 12's arm64 nodejs is v18 while package.json's engines says >= 20: engines is
// npm's install-time check, and this runs dist/ directly, so nothing enforces it; the test shows
// the Node-API 8 addon and dist/ work on 18 too.
//   --build    cross-compile the prebuild first (as npm run build:prebuilds -- --arch arm64)
//   --require  fail, instead of skipping, when apt cannot provide the tools (.ci/run uses it)
const fs = require('fs')
const path = require('path')
const { ensureEmulator } = require('./qemu-arm64')
const { buildPrebuild, prebuildPath, elfMachine, TARGETS } = require('./prebuild')
const { sourceHash } = require('./source-hash')
const { echoPair } = require('../test/package/echo-pair')

const root = path.join(__dirname, '..')
const args = process.argv.slice(2)

function skip (why) {
  if (args.includes('--require')) {
    console.error(`test:arm64: FAILED: cannot run (${why})`)
    process.exit(1)
  }
  console.log(`test:arm64: skipped: ${why}`)
  process.exit(0)
}

async function main () {
  const prebuild = prebuildPath('arm64')
  if (args.includes('--build')) buildPrebuild('arm64')
  const rel = path.relative(root, prebuild)
  if (!fs.existsSync(prebuild)) throw new Error(`${rel} is missing (npm run build:prebuilds -- --arch arm64 makes it)`)
  if (elfMachine(prebuild) !== TARGETS.arm64.machine) throw new Error(`${rel} is not an AArch64 binary`)
  const emu = ensureEmulator()
  if (emu.skip) skip(emu.skip)
  // Emulated, a 3 MiB echo takes 5 s on an idle machine, 30 s on a busy one.
  const env = { ...process.env, PREBUILDS_ONLY: '1', FASTSOCK_DEBUG: '', FASTSOCK_ECHO_TIMEOUT_MS: '240000' }
  let failed = 0
  const check = (ok, what) => {
    console.log(`${ok ? 'ok' : 'not ok'} - ${what}`)
    if (!ok) failed++
  }
  const hash = sourceHash(root)
  check(fs.readFileSync(prebuild).includes(hash), `${rel} was built from csrc/ as it is (source ${hash.slice(0, 12)}; else: npm run build:prebuilds)`)
  for (const [rung, esmClient] of [['shm', true], ['unix', false]]) {
    const t0 = Date.now()
    const { server, client, served } = await echoPair({ command: emu.command, cwd: root, env, rung, esmClient, timeoutMs: 300000 })
    console.log(`# ${rung}: server ${JSON.stringify(server)}`)
    console.log(`# ${rung}: client ${JSON.stringify(client)}`)
    console.log(`# ${rung}: served ${JSON.stringify(served)}`)
    check(server.arch === 'arm64' && client.arch === 'arm64', `both peers are arm64 processes (node ${client.node}, under qemu-aarch64)`)
    check([server, client].every(p => p.addons.length === 1 && p.addons[0] === prebuild), `both loaded ${rel} and no other addon`)
    check(client.ok === true && client.bytes > 0, `${rung}: the client got its ${client.bytes} bytes back intact${client.esm ? ' (fastsock loaded with import())' : ''}`)
    check(client.transport === rung && served.served === rung, `${rung}: both ends ran over ${rung} (client ${client.transport}, server ${served.served})`)
    check(served.bytes === client.bytes, `${rung}: the server saw the same bytes (${served.bytes}) in ${Date.now() - t0} ms`)
  }
  if (failed > 0) {
    console.error(`test:arm64: ${failed} check(s) failed`)
    process.exit(1)
  }
  console.log('test:arm64: the linux-arm64 prebuild passes the smoke test')
}

main().catch(err => {
  console.error(`test:arm64: FAILED: ${err.stack || err.message}`)
  process.exit(1)
})
