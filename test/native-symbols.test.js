'use strict'
// The addon must load on hosts without rdma-core and resolve every symbol it calls at load
// time: its only undefined symbols are Node's (napi_*, uv_*) and versioned C/C++ runtime ones.
// An rdma-core function called directly (instead of through csrc/rdma/lib.h's dlopen table), or
// a C++ function whose declaration fell into an `extern "C"` block, shows up here as an
// unversioned undefined symbol, which would only fail at its first call (lazy binding).
const t = require('tap')
const path = require('path')
const { spawnSync } = require('child_process')

const nm = spawnSync('nm', ['--version'])
const file = require('node-gyp-build').path(path.join(__dirname, '..'))

t.test('undefined symbols of the addon: Node API, libuv, versioned runtime only', { skip: nm.error ? 'nm (binutils) is not installed' : false }, async t => {
  const r = spawnSync('nm', ['-D', '-u', file], { encoding: 'utf8' })
  t.equal(r.status, 0, `nm ran on ${file}`)
  const strong = r.stdout.split('\n').map(l => l.trim().split(/\s+/)).filter(f => f.length === 2 && f[0] === 'U').map(f => f[1])
  t.ok(strong.length > 0, 'the addon has undefined symbols to check (nm output parsed)')
  const unexpected = strong.filter(s => !s.includes('@') && !/^(napi_|node_api_|uv_)/.test(s))
  t.same(unexpected, [], 'no other undefined symbol')
  t.notOk(strong.some(s => /^(ibv_|rdma_|rsocket|rconnect|rpoll)/.test(s)), 'rdma-core is never linked')
})
