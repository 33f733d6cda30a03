'use strict'
// One rank of a job running an NPB kernel (tools/src/npb/kernels/<kernel>.ts) directly, for
// tools/test/npb-cg-ft.test.js: `fastsock mpirun -n P node npb-cg-ft-rank.js <kernel> <class>
// [blocking] [corrupt] [tcp]`. Rank 0 prints the KernelResult as one JSON line.
const path = require('path')
const { root, tools } = require('./cli')
const mpi = require(path.join(root, 'dist', 'mpi', 'index.js'))

const [name, cls, ...flags] = process.argv.slice(2)
const { kernel } = require(path.join(tools, 'dist', 'npb', 'kernels', `${name}.js`))

async function main () {
  const comm = await mpi.init(flags.includes('tcp') ? { transports: ['tcp'] } : {})
  const res = await kernel.run(mpi, comm, cls, { blocking: flags.includes('blocking'), corrupt: flags.includes('corrupt') })
  if (comm.rank === 0) process.stdout.write(`${JSON.stringify(res)}\n`)
  await mpi.finalize()
}

main().catch((err) => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
