'use strict'
// npm install step: use a prebuilt addon when one loads on this machine (prebuilds/ or an
// existing build/Release), otherwise build from source with cmake-js, offline: headers come
// from the node-api-headers and node-addon-api packages (package.json binary.napi_versions).
// FASTSOCK_BUILD_FROM_SOURCE=1 skips the prebuild.
const path = require('path')
const { spawnSync } = require('child_process')
const root = path.join(__dirname, '..')

function loads () {
  try {
    const addon = require('node-gyp-build')(root)
    return typeof addon.connectAbstract === 'function'
  } catch (err) {
    return false
  }
}

if (process.env.FASTSOCK_BUILD_FROM_SOURCE !== '1' && loads()) {
  console.log('fastsock: using the prebuilt native addon')
  process.exit(0)
}
console.log('fastsock: building the native addon from source (cmake-js)')
const cmakeJs = require.resolve('cmake-js/bin/cmake-js')
const r = spawnSync(process.execPath, [cmakeJs, 'compile', '--directory', root], { stdio: 'inherit' })
if (r.status !== 0) {
  console.error('fastsock: native build failed; fastsock will load but use TCP only ' +
    '(needs cmake and a C++17 compiler: apt-get install cmake g++)')
  // Not fatal: without the addon every connection falls back to TCP.
}
