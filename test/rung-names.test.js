'use strict'
// The socket, the server and the chain read a Channel's capabilities and hooks, never a rung's
// name: none of them names a rung in a string literal or imports a rung's module
// (docs/design.md, "One rung contract"). The registry lists every rung module.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { TRANSPORT_NAMES } = require('../dist/index.js')

const root = path.join(__dirname, '..')
const lib = path.join(root, 'lib')
const RUNG_FREE = ['socket.ts', 'chain.ts', 'server.ts', ...fs.readdirSync(path.join(lib, 'socket')).map(f => 'socket/' + f), 'stream/endpoint-stream.ts']

/** The source without comments, so that docstrings may speak of rungs. */
function code (file) {
  return fs.readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
}

t.test('the rung names are known', async t => {
  t.same([...TRANSPORT_NAMES], ['shm', 'unix', 'verbs', 'rsocket', 'smc', 'sdp', 'tcp'])
})

for (const rel of RUNG_FREE) {
  t.test(`lib/${rel} names no rung`, async t => {
    const src = code(path.join(lib, rel))
    for (const name of TRANSPORT_NAMES) {
      const literal = new RegExp(`(['"\`])${name}\\1`)
      t.notMatch(src, literal, `no '${name}' string literal`)
    }
    const rungModules = new RegExp(`(from|require\\(|import\\()\\s*['"][./]*transports/(${TRANSPORT_NAMES.join('|')}|kernelfd|remote|rdma)(/[^'"]*)?['"]`)
    t.notMatch(src, rungModules, 'no import of a rung module')
  })
}

t.test('the check can fail', async t => {
  t.match("if (this.transport === 'unix')", /(['"`])unix\1/, 'a literal is caught')
  t.match("import { smc } from './transports/smc'", /(from|require\(|import\()\s*['"][./]*transports\/(smc)(\/[^'"]*)?['"]/, 'an import is caught')
})

t.test('the registry lists every rung module', async t => {
  const src = fs.readFileSync(path.join(lib, 'transports', 'registry.ts'), 'utf8')
  for (const name of TRANSPORT_NAMES) {
    const file = fs.existsSync(path.join(lib, 'transports', `${name}.ts`)) || fs.existsSync(path.join(lib, 'transports', name, 'index.ts'))
    t.ok(file, `lib/transports/${name}(.ts|/index.ts) exists`)
    t.match(src, new RegExp(`import \\{ ${name} \\} from '\\./${name}'`), `the registry imports ${name}`)
  }
  t.notMatch(fs.readFileSync(path.join(lib, 'transports', 'registry.ts'), 'utf8'), /^import '/m, 'no side-effect import')
})

// The stream core drives any endpoint through StreamEndpoint alone: no rung's endpoint type,
// type test or error (docs/design.md, "The stream core").
t.test('the stream core knows no rung\'s endpoint', async t => {
  for (const file of fs.readdirSync(path.join(lib, 'stream'))) {
    const src = code(path.join(lib, 'stream', file))
    t.notMatch(src, /\b(is)?(Shm|Unix|Verbs|Rsocket|Smc|Sdp)[A-Z]\w*/, `lib/stream/${file}: no rung-named identifier (isShmEndpoint, ShmOnlyError...)`)
  }
})

// The side channel's listener and framing are generic: what a rung pipelines behind HELLO is
// that rung's offer (SideChannelOffer.early) and the wire codec's, not the listener's.
t.test('the side channel\'s generic parts name no shm wire constant', async t => {
  for (const file of ['listener.ts', 'client.ts', 'framed-read.ts', 'serve.ts', 'connector.ts']) {
    const src = code(path.join(lib, 'sidechannel', file))
    t.notMatch(src, /wire\.(CAP_SHM\w*|SHM_\w+|ACCEPT_SHM_EARLY|TRANSPORT_SHM)/, `lib/sidechannel/${file}: no shm wire constant`)
  }
})
