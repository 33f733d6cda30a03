'use strict'
// Debian's arm64 node on an x86-64 Debian host, from apt only, for scripts/test-arm64.js:
// qemu-user (qemu-aarch64) and a sysroot holding Debian's `nodejs:arm64` with the libraries it
// needs, downloaded and extracted (apt-get download + dpkg -x): installing nodejs:arm64 through
// multiarch would replace the host's own node. Adds the arm64 dpkg architecture for the download.
const fs = require('fs')
const path = require('path')
const { spawnSync } = require('child_process')
const apt = require('./apt')

const ARCH = 'arm64'

/**
 * The closure of `pkgs` (Debian names with `:arm64`) over Depends and Pre-Depends, first
 * alternative of each, virtual packages resolved to their first provider: the target's packages
 * plus the architecture-independent ones they need (Debian's nodejs loads acorn, undici and
 * cjs-module-lexer from /usr/share/nodejs).
 */
function dependencyClosure (pkgs) {
  const seen = new Set()
  let level = pkgs
  while (level.length > 0) {
    level.forEach(p => seen.add(p))
    const r = spawnSync('apt-cache', ['depends', '--no-recommends', '--no-suggests', '--no-conflicts',
      '--no-breaks', '--no-replaces', '--no-enhances', ...level], { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`apt-cache depends ${level.join(' ')} failed: ${r.stderr}`)
    const next = new Set()
    const lines = r.stdout.split('\n')
    for (let i = 0; i < lines.length; i++) {
      // ` |Depends: a` then `  Depends: b`: a or b. The first alternative is taken.
      const m = /^ [ |](?:Pre)?Depends: (.+)$/.exec(lines[i])
      if (m === null || /^ \|(?:Pre)?Depends:/.test(lines[i - 1] ?? '')) continue
      let name = m[1].trim()
      if (name.startsWith('<')) name = (lines[i + 1] ?? '').trim() // a virtual: its first provider
      if (name === '' || (name.includes(':') && !name.endsWith(`:${ARCH}`))) continue
      // An unqualified name from a target package is architecture independent (arch: all) or the
      // host's (a Multi-Arch: foreign tool such as dpkg): only the former is kept, below.
      if (!seen.has(name)) next.add(name)
    }
    const all = archAll([...next].filter(p => !p.endsWith(`:${ARCH}`)))
    level = [...next].filter(p => p.endsWith(`:${ARCH}`) || all.has(p))
  }
  return [...seen].sort()
}

/** Those of `pkgs` whose candidate is architecture independent (Architecture: all). */
function archAll (pkgs) {
  const all = new Set()
  if (pkgs.length === 0) return all
  const r = spawnSync('apt-cache', ['show', '--no-all-versions', ...pkgs], { encoding: 'utf8' })
  for (const record of (r.stdout ?? '').split(/\n\n+/)) {
    const name = /^Package: (\S+)$/m.exec(record)
    if (name !== null && /^Architecture: all$/m.test(record)) all.add(name[1])
  }
  return all
}

/**
 * qemu-user and a sysroot with Debian's arm64 nodejs. Returns { sysroot, node, command(args) }
 * where `node` is the arm64 binary and `command(args)` the [file, argv] that runs it emulated, or
 * { skip: reason } when apt cannot provide them here.
 */
function ensureEmulator () {
  const why = apt.ensurePackages(['qemu-user'])
  if (why !== null) return { skip: why }
  let sysroot
  try {
    sysroot = apt.extracted('sysroot', [`nodejs:${ARCH}`], dependencyClosure)
  } catch (err) {
    const noApt = apt.aptUnavailable()
    if (noApt !== null) return { skip: `${noApt}; needs Debian's nodejs:${ARCH}` }
    throw err
  }
  const node = path.join(sysroot, 'usr', 'bin', 'node')
  if (!fs.existsSync(node)) throw new Error(`nodejs:${ARCH} extracted without usr/bin/node (${sysroot})`)
  // -L: the guest's absolute paths (its dynamic loader, libraries, /usr/share/nodejs) resolve in
  // the sysroot first, then on the host.
  return { sysroot, node, command: (args) => ['qemu-aarch64', ['-L', sysroot, node, ...args]] }
}

module.exports = { ensureEmulator, dependencyClosure }
