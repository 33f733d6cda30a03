'use strict'
// The published typings (dist/**/*.d.ts, through package.json's "types" and "exports") compile
// with skipLibCheck: false under @types/node 20, 22, 24 and 26, each installed from the npm
// registry into a temp directory (npm install), with the TypeScript the project builds with. A
// program using fastsock and fastsock/mpi, compiled strict; dist/socket/options.d.ts failed
// under 22 and later (TS2430: SocketOptions' widened `onread` against Node's). Skipped, with the
// reason, when the registry cannot be reached (CI fails instead).
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')
const ts = require('typescript')

const ROOT = path.join(__dirname, '..')
const IN_CI = process.env.CI === 'true'
const VERSIONS = [20, 22, 24, 26]

const PROGRAM = `
import * as net from 'fastsock'
import * as mpi from 'fastsock/mpi'
const sock: net.Socket = net.connect({ port: 7000, transports: ['shm', 'tcp'] })
sock.end()
export async function main (): Promise<void> {
  const comm: mpi.Comm = await mpi.init({ watchMs: 5000, abortOnError: true })
  await comm.allreduce(mpi.IN_PLACE, new Float64Array(4), mpi.SUM)
  await mpi.finalize()
}
`

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-types-'))
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))

for (const v of VERSIONS) {
  t.test(`@types/node ${v}: the typings compile with skipLibCheck: false`, async t => {
    const d = path.join(dir, `v${v}`)
    fs.mkdirSync(path.join(d, 'node_modules'), { recursive: true })
    fs.writeFileSync(path.join(d, 'package.json'), '{ "private": true }')
    const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', `@types/node@${v}`], { cwd: d, encoding: 'utf8', timeout: 180000 })
    if (r.status !== 0) {
      if (IN_CI) t.fail(`npm install @types/node@${v} failed: ${r.stderr}`)
      else t.skip(`npm install @types/node@${v} failed (no registry here?): ${(r.stderr || '').split('\n')[0]}`)
      return
    }
    fs.symlinkSync(ROOT, path.join(d, 'node_modules', 'fastsock'), 'dir')
    const installed = JSON.parse(fs.readFileSync(path.join(d, 'node_modules', '@types', 'node', 'package.json'), 'utf8')).version
    t.equal(Number(installed.split('.')[0]), v, `@types/node ${installed}`)
    const file = path.join(d, 'use.ts')
    fs.writeFileSync(file, PROGRAM)
    const program = ts.createProgram([file], {
      strict: true, noEmit: true, skipLibCheck: false, target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16,
      typeRoots: [path.join(d, 'node_modules', '@types')], types: ['node']
    })
    const errs = ts.getPreEmitDiagnostics(program).map(x => `${x.file ? path.relative(ROOT, x.file.fileName) : ''}: TS${x.code} ${ts.flattenDiagnosticMessageText(x.messageText, ' ')}`)
    t.same(errs, [], 'no diagnostics')
  })
}
