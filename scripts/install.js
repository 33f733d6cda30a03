'use strict'
// npm install step: use the addon node-gyp-build would load (a local build/Release, else
// prebuilds/<platform>-<arch>/) when it loads here AND was built from csrc/ as shipped (its
// sourceHash, scripts/source-hash.js); otherwise build from source with cmake-js, offline
// (headers from the npm registry: node-api-headers via cmake-js, node-addon-api).
// cmake-js and node-addon-api are optionalDependencies: an install with --omit=optional relies
// on the prebuilds, and when none fits it says so and leaves fastsock on TCP only (or on the
// mismatched prebuild, which lib/native.ts still refuses when it lacks an export it needs).
// Never fails the install: without a usable addon every connection falls back to TCP.
// FASTSOCK_BUILD_FROM_SOURCE=1 skips the prebuild.
const fs = require('fs')
const path = require('path')
const { spawnSync } = require('child_process')
const { sourceHash } = require('./source-hash')

const root = path.join(__dirname, '..')
const platformArch = `${process.platform}-${process.arch}`
const log = (msg) => console.log(`fastsock: ${msg}`)

/** What node-gyp-build would load here, or null when there is nothing for this platform. */
function candidate () {
  try {
    return require('node-gyp-build').resolve(root)
  } catch {
    return null
  }
}

/** Why `file` must not be used (it does not load, or was built from other sources), or null. */
function unfit (file) {
  let addon
  try {
    addon = require(file)
  } catch (err) {
    return `it does not load here (${err.message.split('\n')[0]})`
  }
  if (!fs.existsSync(path.join(root, 'csrc'))) return null // nothing to compare with, nor to build
  const expected = sourceHash(root)
  if (addon.sourceHash === expected) return null
  return `it was built from other sources than csrc/ (source ${String(addon.sourceHash).slice(0, 12)}, csrc/ ${expected.slice(0, 12)})`
}

function main () {
  let fallback = 'fastsock will use TCP only'
  if (process.env.FASTSOCK_BUILD_FROM_SOURCE !== '1') {
    const file = candidate()
    const rel = file && path.relative(root, file)
    const why = file && unfit(file)
    if (file && !why) return log(`using the native addon ${rel} (built from csrc/ as it is)`)
    if (file) log(`not using ${rel}: ${why}`)
    else log(`no prebuilt native addon for ${platformArch}`)
    if (file && !why.startsWith('it does not load')) fallback = `fastsock will load ${rel} as it is`
  }
  let cmakeJs
  try {
    cmakeJs = require.resolve('cmake-js/bin/cmake-js')
  } catch {
    return log('cannot build the native addon from source: cmake-js is not installed (an optional ' +
      'dependency, left out by --omit=optional: npm install cmake-js node-addon-api, then ' +
      `npm rebuild fastsock); ${fallback}`)
  }
  log('building the native addon from source (cmake-js)')
  const r = spawnSync(process.execPath, [cmakeJs, 'compile', '--directory', root], { stdio: 'inherit' })
  if (r.status !== 0) {
    log(`native build failed (needs cmake and a C++17 compiler: apt-get install cmake g++); ${fallback}`)
  }
}

main()
