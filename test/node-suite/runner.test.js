'use strict'
// scripts/node-suite: the apt/Sources parsing that finds Debian's nodejs source, and the runner
// run for real on small test files: flags from "// Flags:", a hang killed with its process group,
// and the rungs read from the preload's transport log (lib/register.ts, FASTSOCK_TRANSPORT_LOG).
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { parseDeb822Sources, parseOneLineSources, nodejsEntry, candidates, upstreamOf } = require('../../scripts/node-suite/fetch')
const { runFile, flagsOf, makeTestDir, parallelStatus } = require('../../scripts/node-suite/run')
const { bestRung } = require('../helpers/rungs')

const REGISTER = path.join(__dirname, '../../dist/register.js')

t.test('apt sources: deb822 and one-line, and the suites tried in order', async t => {
  const deb822 = parseDeb822Sources([
    'Types: deb',
    '# a comment',
    'URIs: http://mirror.example/debian',
    'Suites: bookworm bookworm-updates',
    'Components: main',
    'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg',
    '',
    'Types: deb',
    'URIs: http://mirror.example/debian-security',
    'Suites: bookworm-security',
    'Components: main',
    '',
    'Types: deb',
    'URIs: https://deb.nodesource.com/node_20.x',
    'Suites: nodistro',
    'Components: main',
    'Enabled: no'
  ].join('\n'))
  t.equal(deb822.length, 2, 'the disabled entry is left out')
  t.same(deb822[0].suites, ['bookworm', 'bookworm-updates'])
  const oneLine = parseOneLineSources('deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian/ trixie main contrib\n# deb http://x/ y main\n')
  t.same(oneLine, [{ uri: 'http://m.example/debian', suites: ['trixie'], components: ['main', 'contrib'], types: ['deb'], keyring: '/k.gpg' }])
  t.same(candidates(deb822).map(c => c.suite),
    ['bookworm', 'bookworm-updates', 'bookworm-security', 'bookworm-backports', 'stable', 'testing', 'unstable'])
})

t.test('Sources: the nodejs entry of the running major, with the orig tarball checksum', async t => {
  const stanza = (version, orig, sha) => [
    'Package: nodejs',
    `Version: ${version}`,
    'Checksums-Sha256:',
    ` ${'a'.repeat(64)} 4385 nodejs_${version}.dsc`,
    ` ${'b'.repeat(64)} 274900 ${orig.replace('.orig', '.orig-ada')}`,
    ` ${sha} 19886184 ${orig}`,
    'Directory: pool/main/n/nodejs',
    ''
  ].join('\n')
  const text = [
    stanza('18.19.0+dfsg-6', 'nodejs_18.19.0+dfsg.orig.tar.xz', 'c'.repeat(64)),
    stanza('20.9.0+dfsg-1', 'nodejs_20.9.0+dfsg.orig.tar.xz', 'e'.repeat(64)),
    stanza('20.19.2+dfsg-1+deb13u3', 'nodejs_20.19.2+dfsg.orig.tar.xz', 'd'.repeat(64)),
    'Package: nodejs-doc\nVersion: 20.99.0-1\n'
  ].join('\n')
  t.same(nodejsEntry(text, 20), {
    version: '20.19.2+dfsg-1+deb13u3',
    directory: 'pool/main/n/nodejs',
    orig: { name: 'nodejs_20.19.2+dfsg.orig.tar.xz', sha256: 'd'.repeat(64), size: 19886184 }
  }, 'the highest 20.x, main orig tarball (not orig-ada)')
  t.equal(nodejsEntry(text, 22), null)
  t.equal(upstreamOf('1:20.19.2+dfsg-1+deb13u3'), '20.19.2+dfsg')
})

t.test('parallel.status: the sections that apply on this system', async t => {
  const dir = t.testdir({
    'parallel.status': '[true]\ntest-a: PASS, FLAKY\n[$system==win32]\ntest-b: SKIP\n[$system==linux || $system==win32]\ntest-c: SKIP\n'
  })
  t.same(parallelStatus(path.join(dir, 'parallel.status')), { 'test-a': 'PASS, FLAKY', 'test-c': 'SKIP' })
})

t.test('runFile: flags, exit codes, a hang and its process group, the rungs', async t => {
  const root = t.testdir({
    test: {
      parallel: {
        'test-flags.js': "'use strict'\n// Flags: --expose-gc --no-warnings\nif (typeof gc !== 'function') process.exit(3)\n",
        'test-fails.js': 'process.exitCode = 4\n',
        // A hang whose grandchild would outlive it unless the whole group is killed.
        'test-hang.js': [
          "const { spawn } = require('child_process')",
          "const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })",
          "require('fs').writeFileSync(process.argv[2] || require('path').join(__dirname, 'grandchild.pid'), String(c.pid))",
          'setInterval(() => {}, 1000)'
        ].join('\n'),
        // Done, but a connected socket keeps it alive; and one stuck before its check passes.
        'test-no-exit.js': [
          "const net = require('net')",
          "const server = net.createServer(s => {}).listen(0, '127.0.0.1', () => { net.connect(server.address().port, '127.0.0.1') })"
        ].join('\n'),
        'test-stuck.js': [
          "let done = false",
          "process.on('exit', () => { if (!done) { console.error('not done'); process.exitCode = 1 } })",
          'setInterval(() => {}, 1000)'
        ].join('\n'),
        'test-connect.js': [
          "const net = require('net')",
          "const server = net.createServer(s => s.end('x')).listen(0, '127.0.0.1', () => {",
          "  net.connect(server.address().port, '127.0.0.1').on('data', () => {}).on('end', () => server.close())",
          '})'
        ].join('\n')
      }
    }
  })
  const testDir = makeTestDir()
  t.teardown(() => fs.rmSync(testDir, { recursive: true, force: true }))
  let serial = 0
  const run = (name, config, timeoutMs = 20000) => runFile(path.join(root, 'test/parallel', name), config,
    { root, register: REGISTER, slot: 0, serial: serial++, testDir, timeoutMs })

  t.same(flagsOf('// Copyright\n// Flags: --expose-internals  --no-warnings\n'), ['--expose-internals', '--no-warnings'])
  t.match(await run('test-flags.js', 'plain'), { status: 'pass', code: 0 }, 'the // Flags: line reached node')
  t.match(await run('test-fails.js', 'default'), { status: 'fail', code: 4 })

  const hang = await run('test-hang.js', 'plain', 1500)
  t.match(hang, { status: 'hang', signal: 'SIGKILL' })
  t.ok(hang.durationMs >= 1500 && hang.durationMs < 10000, `killed at the timeout (${hang.durationMs} ms)`)
  const grandchild = Number(fs.readFileSync(path.join(root, 'test/parallel/grandchild.pid'), 'utf8'))
  let alive = true
  for (let i = 0; i < 50 && alive; i++) {
    try { process.kill(grandchild, 0); await new Promise(resolve => setTimeout(resolve, 100)) } catch { alive = false }
  }
  t.equal(alive, false, 'the hung test\'s child was killed with its group')

  const noExit = await run('test-no-exit.js', 'default', 11000)
  t.match(noExit, { status: 'hang', hang: 'no-exit' }, 'the exit probe: done but does not exit')
  t.ok(noExit.rungs[bestRung] >= 1, 'the server side of a hung run is in the transport log')
  t.match(await run('test-stuck.js', 'plain', 11000), { status: 'hang', hang: 'stuck', code: 1 }, 'the exit probe: stuck before its checks passed')

  const plain = await run('test-connect.js', 'plain')
  t.match(plain, { status: 'pass', rungs: {} }, 'no transport log without the preload')
  t.same(Object.keys(plain.rungs), [])
  const fast = await run('test-connect.js', 'default')
  t.equal(fast.status, 'pass')
  t.same(fast.rungs, { [bestRung]: 2 }, `client and server side on ${bestRung}`)
  const unix = await run('test-connect.js', 'unix')
  t.same(unix.rungs, { unix: 2 }, 'FASTSOCK_TRANSPORTS=unix,tcp: the unix rung')
})

t.test('main: a failure with the preload counts only when retries fail and the file passes plain again', async t => {
  const { spawnSync } = require('child_process')
  const major = process.versions.node.split('.')[0]
  // Each file counts its runs per mode (FASTSOCK_TRANSPORT_LOG is set only with the preload).
  const counting = body => [
    "const fs = require('fs'); const path = require('path')",
    "const preload = !!process.env.FASTSOCK_TRANSPORT_LOG",
    "const mark = path.join(process.env.NS_MARK_DIR, path.basename(__filename) + (preload ? '.preload' : '.plain'))",
    "const n = fs.existsSync(mark) ? Number(fs.readFileSync(mark, 'utf8')) + 1 : 1",
    'fs.writeFileSync(mark, String(n))',
    body
  ].join('\n')
  const cache = t.testdir({
    [`node-${major}`]: {
      'source.json': JSON.stringify({ version: `${major}.99.0+dfsg-1`, suite: 'test' }),
      [`${major}.99.0+dfsg`]: {
        '.complete': '',
        test: {
          parallel: {
            'test-net-always.js': counting('if (preload) process.exitCode = 1'),
            'test-net-flaky.js': counting('if (preload && n === 1) process.exitCode = 1'),
            'test-net-flaky-plain.js': counting('if (preload || n > 1) process.exitCode = 1'),
            'test-http-fine.js': counting('')
          }
        }
      }
    },
    marks: {}
  })
  const marks = path.join(cache, 'marks')
  const count = (file, mode) => Number(fs.readFileSync(path.join(marks, `${file}.${mode}`), 'utf8'))
  const json = path.join(cache, 'results.json')
  const main = filter => spawnSync(process.execPath, [path.join(__dirname, '../../scripts/node-suite/main.js'),
    '--cache', cache, '--config', 'plain,default', '--retries', '2', '--timeout', '20', '--json', json, '--quiet', ...(filter ? ['--filter', filter] : [])],
  { env: { ...process.env, NS_MARK_DIR: marks }, encoding: 'utf8' })

  const r = main(null)
  if (!t.equal(r.status, 1, 'a regression: exit 1')) t.comment(r.stdout + r.stderr)
  t.match(r.stdout, /new regression on default: test-net-always\.js/)
  t.notMatch(r.stdout, /new regression on default: test-net-flaky/)
  const { files } = JSON.parse(fs.readFileSync(json, 'utf8'))
  t.equal(count('test-net-always.js', 'preload'), 3, 'run, then 2 retries')
  t.equal(count('test-net-always.js', 'plain'), 2, 'and plain again')
  t.match(files['test-net-always.js'], { default: { status: 'fail' }, plainAgain: { status: 'pass' } })
  t.equal(count('test-net-flaky.js', 'preload'), 2, 'passing on the first retry ends the retries')
  t.match(files['test-net-flaky.js'].default, { status: 'pass', flaky: { status: 'fail' } })
  t.match(files['test-net-flaky-plain.js'], { plain: { status: 'pass' }, plainAgain: { status: 'fail' } }, 'failing plain too when run again: not counted')
  t.match(r.stdout, /not counted on default: test-net-flaky-plain\.js/)
  t.equal(count('test-http-fine.js', 'preload'), 1)

  const ok = main('flaky,fine')
  if (!t.equal(ok.status, 0, 'no regression: exit 0')) t.comment(ok.stdout + ok.stderr)
  t.match(ok.stdout, /OK: no regression/)
})
