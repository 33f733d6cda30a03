'use strict'
// The library's `fastsock` command line (lib/cli/main.ts, node:util's parseArgs): --help,
// --version, usage errors with status 2, `run`'s own usage; and `pipe | rate | osu` handed to
// fastsock-tools (this repository's workspace) under the name `fastsock`. `probe` has
// test/cli-probe.test.js, `mpirun` test/mpi/mpirun.test.js; without fastsock-tools:
// test/package/library-deps.test.js.
const t = require('tap')
const { execFile } = require('child_process')
const path = require('path')

const root = path.join(__dirname, '..')
const cli = path.join(root, 'dist', 'cli', 'main.js')

function run (args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr })
    })
  })
}

t.test('--help lists every command; --version the package version', async t => {
  const h = await run(['--help'])
  t.equal(h.code, 0)
  for (const c of ['run', 'mpirun', 'probe', 'pipe', 'rate', 'osu']) t.match(h.stdout, new RegExp(`^  ${c}\\b`, 'm'), `names ${c}`)
  t.match(h.stdout, /fastsock-tools package \(installed\)/, 'and that fastsock-tools is installed here')
  const v = await run(['--version'])
  t.equal(v.code, 0)
  t.equal(v.stdout.trim(), require('../package.json').version)
  const none = await run([])
  t.equal(none.code, 2, 'no command: usage, status 2')
  t.match(none.stderr, /Usage: fastsock <command>/)
})

t.test('usage errors: status 2, one message', async t => {
  for (const args of [['frobnicate'], ['run'], ['run', '--frobnicate', 'node'], ['probe', 'extra']]) {
    const r = await run(args)
    t.equal(r.code, 2, args.join(' '))
    t.match(r.stderr, /^fastsock( \w+)?: error: /, 'says what is wrong')
  }
  const h = await run(['run', '--help'])
  t.equal(h.code, 0)
  t.match(h.stdout, /Usage: fastsock run \[--\] <command>/)
})

t.test('pipe, rate and osu: fastsock-tools, as `fastsock`', async t => {
  for (const c of ['pipe', 'rate', 'osu']) {
    const r = await run([c, '--help'])
    t.equal(r.code, 0, `${c} --help: ${r.stderr}`)
    t.match(r.stdout, new RegExp(`^Usage: fastsock ${c} `, 'm'), `${c}'s own help, named fastsock ${c}`)
  }
  const bad = await run(['pipe', '--frobnicate'])
  t.equal(bad.code, 2, "a tool's usage error is status 2 too")
  t.match(bad.stderr, /unknown option '--frobnicate'/)
})
