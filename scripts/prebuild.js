'use strict'
// `npm run build:prebuilds`: builds the addon for linux-x64 and for linux-arm64 (glibc) and
// stages each where node-gyp-build (and prebuildify's naming) expect it:
// prebuilds/linux-<arch>/fastsock.napi.node. (Not an npm script named `prebuild`: npm would run
// that before every `npm run build`.) Node-API only, so one binary serves every Node
// version on that platform and architecture.
//   npm run build:prebuilds                    both (on an x86-64 Debian host)
//   npm run build:prebuilds -- --arch arm64    one of them
// x64 is built natively; arm64 is cross-compiled with Debian's g++-aarch64-linux-gnu
// (cmake/aarch64-linux-gnu.cmake), installed with apt-get when missing. Both include the RDMA
// rungs, so rdma-core's headers must be there: the host's (libibverbs-dev, librdmacm-dev) or,
// when absent, the same Debian packages downloaded and extracted (not installed) into a cache;
// their headers are identical on every architecture (Multi-Arch: same), and rdma-core is
// dlopen'ed at run time, never linked. Each build runs in build-prebuild/<arch>/, so build/ (the
// development build) is left alone. A prebuild without the RDMA rungs is refused.
const fs = require('fs')
const path = require('path')
const apt = require('./apt')
const { run } = apt
const { sourceHash } = require('./source-hash')

const root = path.join(__dirname, '..')

/** Per architecture: the ELF e_machine of its binaries, and what cross-compiles for it. */
const TARGETS = {
  x64: { machine: 62, strip: 'strip', toolchain: null, aptTools: [] },
  arm64: {
    machine: 183,
    strip: 'aarch64-linux-gnu-strip',
    toolchain: path.join(root, 'cmake', 'aarch64-linux-gnu.cmake'),
    aptTools: ['g++-aarch64-linux-gnu']
  }
}

const RDMA_HEADERS = ['infiniband/verbs.h', 'rdma/rdma_cma.h', 'rdma/rsocket.h']

/** null when the host has rdma-core's headers, else a directory holding them (extracted). */
function rdmaIncludeDir () {
  if (RDMA_HEADERS.every(h => fs.existsSync(path.join('/usr/include', h)))) return null
  return path.join(apt.extracted('rdma-dev', ['libibverbs-dev', 'librdmacm-dev']), 'usr', 'include')
}

/** e_machine of an ELF file (62 x86-64, 183 AArch64), or -1 when it is not one. */
function elfMachine (file) {
  const b = fs.readFileSync(file).subarray(0, 20)
  if (b.length < 20 || b.readUInt32BE(0) !== 0x7f454c46) return -1
  return b[5] === 1 ? b.readUInt16LE(18) : b.readUInt16BE(18)
}

/** Where the prebuild for linux-<arch> lives. */
function prebuildPath (arch) {
  return path.join(root, 'prebuilds', `linux-${arch}`, 'fastsock.napi.node')
}

/**
 * Builds the addon for linux-<arch> ('x64' or 'arm64') and stages it in prebuilds/. Returns the
 * staged path; throws when a tool is missing and apt-get cannot install it, when the build fails,
 * or when the build left the RDMA rungs out.
 */
function buildPrebuild (arch) {
  const target = TARGETS[arch]
  if (target === undefined) throw new Error(`no prebuild target '${arch}' (known: ${Object.keys(TARGETS).join(', ')})`)
  if (target.toolchain === null && process.arch !== arch) throw new Error(`linux-${arch} builds natively only, on an ${arch} host`)
  const why = apt.ensurePackages(target.aptTools)
  if (why !== null) throw new Error(`cannot build for linux-${arch}: ${why}`)
  const rdma = rdmaIncludeDir()
  const out = path.join(root, 'build-prebuild', arch)
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js')
  run(process.execPath, [cmakeJs, 'rebuild', '--directory', root, '--out', out, '--arch', arch,
    ...(target.toolchain !== null ? [`--CDCMAKE_TOOLCHAIN_FILE=${target.toolchain}`] : []),
    `--CDFASTSOCK_RDMA_INCLUDE_DIR=${rdma ?? ''}`])
  const cache = fs.readFileSync(path.join(out, 'CMakeCache.txt'), 'utf8')
  for (const v of ['FASTSOCK_HAS_VERBS_H', 'FASTSOCK_HAS_RDMA_CMA_H', 'FASTSOCK_HAS_RSOCKET_H']) {
    if (!new RegExp(`^${v}:INTERNAL=1$`, 'm').test(cache)) throw new Error(`linux-${arch}: ${v} is not set: the build left the RDMA rungs out`)
  }
  const built = path.join(out, 'Release', 'fastsock.node')
  if (elfMachine(built) !== target.machine) throw new Error(`${built} is not a linux-${arch} binary (ELF machine ${elfMachine(built)})`)
  const staged = prebuildPath(arch)
  fs.mkdirSync(path.dirname(staged), { recursive: true })
  fs.copyFileSync(built, staged)
  run(target.strip, ['--strip-unneeded', staged])
  return staged
}

module.exports = { buildPrebuild, prebuildPath, elfMachine, TARGETS }

if (require.main === module) {
  const argv = process.argv.slice(2)
  const arches = argv.flatMap((a, i) => (argv[i - 1] === '--arch' ? [a] : []))
  const hash = sourceHash(root)
  try {
    for (const arch of arches.length > 0 ? arches : Object.keys(TARGETS)) {
      const staged = buildPrebuild(arch)
      const ok = fs.readFileSync(staged).includes(hash)
      console.log(`staged ${path.relative(root, staged)} (${fs.statSync(staged).size} bytes, source ${hash.slice(0, 12)}${ok ? '' : ', HASH NOT FOUND IN THE BINARY'})`)
      if (!ok) process.exitCode = 1
    }
  } catch (err) {
    console.error(`prebuild: ${err.message}`)
    process.exit(1)
  }
}
