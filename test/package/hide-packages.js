'use strict'
// Preloaded with `node --require`: the packages named in FASTSOCK_TEST_HIDE (comma-separated)
// cannot be resolved, as where they are not installed; every request for one is recorded
// in globalThis.__fastsockHiddenAsked (package names, in order). For test/package/library-deps.test.js
// (an application that installed only fastsock) and tools/test/missing-packages.test.js.
const Module = require('module')

const hidden = new Set((process.env.FASTSOCK_TEST_HIDE || '').split(',').filter(Boolean))
const asked = []
globalThis.__fastsockHiddenAsked = asked
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  const name = request.startsWith('@') ? request.split('/').slice(0, 2).join('/') : request.split('/')[0]
  if (hidden.has(name)) {
    asked.push(name)
    const err = new Error(`Cannot find module '${request}' (hidden by test/package/hide-packages.js)`)
    err.code = 'MODULE_NOT_FOUND'
    throw err
  }
  return resolve.call(this, request, ...rest)
}
