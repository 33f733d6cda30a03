'use strict'
// ESM: `import fastsock, { connect, Socket, ... } from 'fastsock'` (package self-reference, run
// from the package root) gives the same objects as require('fastsock'), and both export every
// key of require('net').
const t = require('tap')
const net = require('net')
const fastsock = require('..')
const { spawnNode } = require('./helpers/util')

const OVERRIDDEN = ['Socket', 'Stream', 'Server', 'connect', 'createConnection', 'createServer']

t.test('CommonJS: every net export', async t => {
  for (const key of Object.keys(net)) {
    t.ok(key in fastsock, `fastsock.${key}`)
    if (!OVERRIDDEN.includes(key)) t.equal(fastsock[key], net[key], `fastsock.${key} is net's`)
  }
  for (const key of OVERRIDDEN) t.not(fastsock[key], net[key], `fastsock.${key} is fastsock's own`)
  t.ok(new fastsock.Socket() instanceof net.Socket, 'a fastsock Socket is a net.Socket')
  t.ok(fastsock.createServer() instanceof net.Server, 'a fastsock Server is a net.Server')
  t.equal(fastsock.Stream, fastsock.Socket, 'Stream is Socket, as in net')
  t.equal(fastsock.createConnection, fastsock.connect, 'createConnection is connect, as in net')
  for (const k of ['transports', 'clearNegativeCache', 'FastsockError', 'TRANSPORT_NAMES']) t.ok(k in fastsock, `fastsock.${k}`)
})

t.test('ESM named and default exports', async t => {
  const code = `
    import fastsock, * as ns from 'fastsock'
    import { connect, Socket, createServer, Server, transports } from 'fastsock'
    import { createRequire } from 'module'
    import * as net from 'node:net'
    const require = createRequire(process.cwd() + '/')
    const cjs = require('fastsock')
    const out = {
      defaultIsCjs: fastsock === cjs,
      namedSame: connect === cjs.connect && Socket === cjs.Socket && createServer === cjs.createServer &&
        Server === cjs.Server && transports === cjs.transports,
      nsSame: Object.keys(cjs).filter(k => k !== 'default' && /^[A-Za-z_$][\\w$]*$/.test(k)).filter(k => ns[k] !== cjs[k]),
      missingNetKeys: Object.keys(net).filter(k => k !== 'default' && !(k in ns)),
      socketIsNetSocket: new Socket() instanceof net.Socket
    }
    process.stdout.write(JSON.stringify(out) + '\\n')
  `
  const child = spawnNode(t, ['--input-type=module', '-e', code])
  const out = await child.waitFor(m => 'defaultIsCjs' in m || 'line' in m)
  const { code: exitCode } = await child.exited
  t.equal(exitCode, 0, `the ESM import runs${child.stderr() ? ': ' + child.stderr() : ''}`)
  t.equal(out.defaultIsCjs, true, 'default export is the CommonJS module')
  t.equal(out.namedSame, true, 'named exports are the CommonJS objects')
  t.same(out.nsSame, [], 'every CommonJS export is a named ESM export with the same value')
  t.same(out.missingNetKeys, [], 'every net export is a named ESM export')
  t.equal(out.socketIsNetSocket, true)
})
