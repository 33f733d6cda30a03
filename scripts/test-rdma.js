#!/usr/bin/env node
'use strict'
// npm run test:rdma: the RDMA rungs' tests on a real kernel RDMA stack. Boots the QEMU guest of
// ../shared/tools/rdma-vm (Soft-RoCE rxe0, SoftiWARP siw0, rsockets, SMC-R with the
// bookworm-backports kernel) and runs scripts/test-rdma-inner.sh inside it, in this directory.
// Where the guest tool is absent (a machine outside this workspace) it says so and exits 0:
// the RDMA rungs are then simply not tested here, as they are absent from such hosts.
// RDMAVM_RUN=<path to run.sh> overrides where the tool is looked for.
const path = require('path')
const fs = require('fs')
const { spawnSync } = require('child_process')

const root = path.join(__dirname, '..')
const candidates = [process.env.RDMAVM_RUN, path.join(root, '../shared/tools/rdma-vm/run.sh'), '/work/shared/tools/rdma-vm/run.sh'].filter(Boolean)
const runSh = candidates.find(p => fs.existsSync(p))
if (!runSh) {
  console.log(`test:rdma: skipped, the RDMA guest tool was not found (looked for ${candidates.join(', ')})`)
  process.exit(0)
}
const args = ['--kernel', 'bookworm-backports', '--smc', '--quiet', '--timeout', process.env.RDMAVM_TIMEOUT || '1200', '--', 'bash', 'scripts/test-rdma-inner.sh', ...process.argv.slice(2)]
console.log(`test:rdma: ${runSh} ${args.join(' ')}`)
const r = spawnSync(runSh, args, { cwd: root, stdio: 'inherit' })
if (r.error) {
  console.error(`test:rdma: could not run ${runSh}: ${r.error.message}`)
  process.exit(1)
}
if (r.status === 125) console.error('test:rdma: the guest failed to boot or timed out (exit 125: infrastructure, not a test failure)')
process.exit(r.status ?? 1)
