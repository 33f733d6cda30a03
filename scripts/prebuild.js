'use strict'
// `npm run prebuild`: builds the addon with cmake-js and stages it where node-gyp-build (and
// prebuildify's naming) expect it: prebuilds/<platform>-<arch>/fastsock.napi.node. Node-API
// only, so one binary serves every Node version >= 20 on this platform and architecture.
const fs = require('fs')
const path = require('path')
const { spawnSync } = require('child_process')
const root = path.join(__dirname, '..')

const cmakeJs = require.resolve('cmake-js/bin/cmake-js')
const r = spawnSync(process.execPath, [cmakeJs, 'rebuild', '--directory', root], { stdio: 'inherit' })
if (r.status !== 0) process.exit(r.status ?? 1)
const built = path.join(root, 'build', 'Release', 'fastsock.node')
const dir = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`)
fs.mkdirSync(dir, { recursive: true })
const out = path.join(dir, 'fastsock.napi.node')
fs.copyFileSync(built, out)
spawnSync('strip', ['--strip-unneeded', out], { stdio: 'inherit' })
console.log(`staged ${path.relative(root, out)} (${fs.statSync(out).size} bytes)`)
