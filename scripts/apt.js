'use strict'
// Debian packages for the scripts that need host tools (the arm64 cross build and its qemu smoke
// test): installs what is missing with apt-get, or says why it cannot. Never used at install
// time of the package.
const fs = require('fs')
const path = require('path')
const { spawnSync } = require('child_process')

/** Downloaded .debs and extracted trees, kept between runs (FASTSOCK_APT_CACHE overrides). */
const CACHE = process.env.FASTSOCK_APT_CACHE || path.join(__dirname, '..', 'node_modules', '.cache', 'fastsock-apt')

/** True when dpkg says `pkg` (a name, optionally `name:arch`) is installed. */
function installed (pkg) {
  const r = spawnSync('dpkg-query', ['-W', '-f', '${db:Status-Status}', pkg], { encoding: 'utf8' })
  return r.status === 0 && r.stdout.trim() === 'installed'
}

/** Why apt-get cannot be used here, or null when it can (Debian's apt-get, running as root). */
function aptUnavailable () {
  if (spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status !== 0) return 'apt-get is not available (not a Debian-based host)'
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'apt-get needs root (run as root, as CI does)'
  return null
}

let updated = false

function apt (args, opts) {
  const r = spawnSync('apt-get', args, { stdio: ['ignore', 2, 2], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, ...opts })
  if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${r.status})`)
}

/** `apt-get update`, once per process (and again after a foreign architecture was added). */
function update () {
  if (updated) return
  apt(['update', '-qq'])
  updated = true
}

/** Runs `apt-get <args>` after update(), output to stderr. Throws with the command line when it fails. */
function aptGet (args, opts = {}) {
  update()
  apt(args, opts)
}

/**
 * Makes sure the Debian packages `pkgs` are installed (without recommends). Returns null when they
 * are, else the reason they are not and cannot be (apt-get unavailable); throws when apt-get fails.
 */
function ensurePackages (pkgs) {
  const missing = pkgs.filter(p => !installed(p))
  if (missing.length === 0) return null
  const why = aptUnavailable()
  if (why !== null) return `${why}; needs the Debian packages ${missing.join(' ')}`
  console.error(`apt-get install ${missing.join(' ')}`)
  aptGet(['install', '-y', '-qq', '--no-install-recommends', ...missing])
  return null
}

/** True when dpkg knows the foreign architecture `arch`. */
function hasForeignArch (arch) {
  const r = spawnSync('dpkg', ['--print-foreign-architectures'], { encoding: 'utf8' })
  return r.status === 0 && r.stdout.split(/\s+/).includes(arch)
}

/** Adds a foreign dpkg architecture (for `apt-get download pkg:arch`); forces the next apt-get update. */
function ensureForeignArch (arch) {
  if (hasForeignArch(arch)) return
  const add = spawnSync('dpkg', ['--add-architecture', arch], { stdio: 'inherit' })
  if (add.status !== 0) throw new Error(`dpkg --add-architecture ${arch} failed`)
  updated = false
}

/** spawnSync with stdio inherited; throws, naming the command, when it fails. */
function run (cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.error?.message})`)
}

/**
 * Downloads the Debian packages `pkgs` (`name` or `name:arch`; a foreign architecture is added to
 * dpkg when needed), or `expand(pkgs)` (a dependency closure, computed once apt's lists are
 * current), and extracts them (dpkg -x, nothing installed) into CACHE/<name>. Reuses a complete
 * earlier extraction of the same `pkgs`. Returns the directory; throws when apt-get cannot
 * be used (the message says why) or fails.
 */
function extracted (name, pkgs, expand = list => list) {
  const dir = path.join(CACHE, name)
  const stamp = path.join(dir, '.fastsock-packages')
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === pkgs.join('\n')) return dir
  const why = aptUnavailable()
  if (why !== null) throw new Error(`${why}; needs the Debian packages ${pkgs.join(' ')}`)
  for (const arch of new Set(pkgs.filter(p => p.includes(':')).map(p => p.split(':')[1]))) ensureForeignArch(arch)
  update()
  const all = expand(pkgs)
  const debs = path.join(CACHE, 'debs', name)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.rmSync(debs, { recursive: true, force: true })
  fs.mkdirSync(debs, { recursive: true })
  // As root: apt's _apt user may not be able to write into the cache (a private clone).
  aptGet(['-o', 'APT::Sandbox::User=root', 'download', '-qq', ...all], { cwd: debs })
  for (const deb of fs.readdirSync(debs).filter(f => f.endsWith('.deb'))) run('dpkg', ['-x', path.join(debs, deb), dir])
  fs.writeFileSync(stamp, pkgs.join('\n'))
  return dir
}

module.exports = { run, CACHE, installed, hasForeignArch, aptUnavailable, update, aptGet, ensurePackages, ensureForeignArch, extracted }
