'use strict'
/**
 * Node's own test files for the running Node major version, from Debian's `nodejs` source
 * package on the apt mirror this machine is configured with (the only network CI has besides
 * npm).
 *
 * The chain of trust is apt's: the suite's InRelease is checked with gpgv against the entry's
 * keyring (Signed-By, else debian-archive-keyring), the Sources index against the SHA-256 in that
 * Release, the orig tarball against the SHA-256 in the Sources entry. Suites are tried in order:
 * the configured ones, then `<codename>-backports`, stable, testing and unstable on the same
 * mirror; the first with a `nodejs` of the running major wins (Debian 12 ships Node 18, Node 20
 * is in Debian 13). Only test/common, test/fixtures and test/parallel/test-{net,http,https}-*
 * are extracted (`tar -x`), into `<cache>/node-<major>/<upstream version>/`; the tarball is
 * not kept.
 */
const fs = require('fs')
const path = require('path')
const crypto = require('crypto')
const { execFileSync, spawnSync } = require('child_process')
const apt = require('../apt')
const { Readable } = require('stream')
const { pipeline } = require('stream/promises')

const DEFAULT_KEYRING = '/usr/share/keyrings/debian-archive-keyring.gpg'
const EXTRACT = [
  'test/common',
  'test/fixtures',
  'test/parallel/test-net-*',
  'test/parallel/test-http-*',
  'test/parallel/test-https-*',
  'test/parallel/parallel.status'
]

/**
 * apt's configured sources: `[{ uri, suites, components, types, keyring }]`, from
 * /etc/apt/sources.list (one-line format) and /etc/apt/sources.list.d/*.list and *.sources
 * (deb822). `root` is the apt configuration directory (default /etc/apt).
 */
function aptSources (root = '/etc/apt') {
  const out = []
  const files = []
  if (fs.existsSync(path.join(root, 'sources.list'))) files.push(path.join(root, 'sources.list'))
  const dir = path.join(root, 'sources.list.d')
  if (fs.existsSync(dir)) for (const f of fs.readdirSync(dir).sort()) files.push(path.join(dir, f))
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8')
    if (file.endsWith('.sources')) out.push(...parseDeb822Sources(text))
    else if (file.endsWith('.list')) out.push(...parseOneLineSources(text))
  }
  return out
}

/** deb822 `.sources` text: one entry per stanza (`Enabled: no` ones are left out). */
function parseDeb822Sources (text) {
  const out = []
  const fieldsList = parseControl(text.split('\n').filter(l => !l.startsWith('#')).join('\n'))
  for (const fields of fieldsList) {
    if (!fields.uris || !fields.suites || /^no$/i.test(fields.enabled ?? '')) continue
    for (const uri of fields.uris.split(/\s+/)) {
      out.push({
        uri: uri.replace(/\/+$/, ''),
        suites: fields.suites.split(/\s+/),
        components: (fields.components ?? '').split(/\s+/).filter(Boolean),
        types: (fields.types ?? 'deb').split(/\s+/),
        keyring: fields['signed-by'] && fields['signed-by'].startsWith('/') ? fields['signed-by'] : null
      })
    }
  }
  return out
}

/** One-line `deb [opts] uri suite components...` text. */
function parseOneLineSources (text) {
  const out = []
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim()
    const m = /^(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line)
    if (!m) continue
    const signed = /signed-by=(\S+)/.exec(m[2] ?? '')
    out.push({
      uri: m[3].replace(/\/+$/, ''),
      suites: [m[4]],
      components: m[5].split(/\s+/).filter(Boolean),
      types: [m[1]],
      keyring: signed ? signed[1] : null
    })
  }
  return out
}

/** The stanzas of a Debian control-style index (Sources, Release) as field maps (lower-case keys). */
function parseControl (text) {
  const out = []
  for (const stanza of text.split(/\n[ \t]*\n/)) {
    const fields = {}
    let last = null
    for (const line of stanza.split('\n')) {
      if (/^\s/.test(line) && last) { fields[last] += '\n' + line.trim(); continue }
      const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line)
      if (m) { last = m[1].toLowerCase(); fields[last] = m[2] }
    }
    if (Object.keys(fields).length) out.push(fields)
  }
  return out
}

/** A `Checksums-Sha256` field's lines as `{ name: { sha256, size } }`. */
function sha256List (field) {
  const out = {}
  for (const line of (field ?? '').split('\n')) {
    const m = /^([0-9a-f]{64})\s+(\d+)\s+(\S+)$/.exec(line.trim())
    if (m) out[m[3]] = { sha256: m[1], size: Number(m[2]) }
  }
  return out
}

/** The upstream part of a Debian version (`20.19.2+dfsg-1+deb13u3` -> `20.19.2+dfsg`). */
function upstreamOf (version) {
  return version.replace(/^\d+:/, '').replace(/-[^-]+$/, '')
}

/** Compares two dotted upstream versions numerically (20.19.2 < 20.20.0). */
function compareUpstream (a, b) {
  const pa = a.split(/[^0-9]+/).map(Number)
  const pb = b.split(/[^0-9]+/).map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d) return d
  }
  return 0
}

/**
 * The `nodejs` entry of a Sources index for Node major `major`, or null: `{ version, directory,
 * orig: { name, sha256, size } }` (the highest version when there are several).
 */
function nodejsEntry (sourcesText, major) {
  let best = null
  for (const f of parseControl(sourcesText)) {
    if (f.package !== 'nodejs' || !f.version) continue
    const upstream = upstreamOf(f.version)
    if (Number(upstream.split('.')[0]) !== major) continue
    const files = sha256List(f['checksums-sha256'])
    const name = Object.keys(files).find(n => /^nodejs_[^_]+\.orig\.tar\.(xz|gz|bz2)$/.test(n))
    if (!name) continue
    if (best && compareUpstream(upstream, upstreamOf(best.version)) <= 0) continue
    best = { version: f.version, directory: f.directory, orig: { name, ...files[name] } }
  }
  return best
}

async function download (url, file) {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`)
  await pipeline(Readable.fromWeb(res.body), fs.createWriteStream(file))
}

async function getText (url) {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`)
  return res.text()
}

function sha256File (file) {
  const h = crypto.createHash('sha256')
  h.update(fs.readFileSync(file))
  return h.digest('hex')
}

function verifyFile (file, expected, what) {
  const size = fs.statSync(file).size
  const sha = sha256File(file)
  if (size !== expected.size || sha !== expected.sha256) {
    throw new Error(`${what}: checksum mismatch (got ${sha} ${size} B, expected ${expected.sha256} ${expected.size} B)`)
  }
}

/** The verified Release text of `uri`/`suite`, or null when the suite does not exist there. */
async function release (uri, suite, keyring, tmp) {
  const res = await fetch(`${uri}/dists/${suite}/InRelease`)
  if (res.status === 404) return null
  if (!res.ok) throw new Error(`GET ${uri}/dists/${suite}/InRelease: HTTP ${res.status}`)
  const signed = path.join(tmp, `${suite}.InRelease`)
  fs.writeFileSync(signed, Buffer.from(await res.arrayBuffer()))
  try {
    return execFileSync('gpgv', ['--quiet', '--keyring', keyring, '--output', '-', signed], { stdio: ['ignore', 'pipe', 'pipe'] }).toString()
  } catch (err) {
    throw new Error(`${uri} ${suite}: InRelease signature not verified with ${keyring}: ${(err.stderr || err.message).toString().trim()}`)
  }
}

/** The suites to look in, in order: `[{ uri, suite, keyring }]`. */
function candidates (sources) {
  const out = []
  const seen = new Set()
  const add = (uri, suite, keyring) => {
    const key = `${uri} ${suite}`
    if (!seen.has(key)) { seen.add(key); out.push({ uri, suite, keyring }) }
  }
  const debian = sources.filter(s => s.components.includes('main') && /\/debian(-security)?$/.test(s.uri))
  for (const s of debian) for (const suite of s.suites) add(s.uri, suite, s.keyring ?? DEFAULT_KEYRING)
  for (const s of debian.filter(s => !/-security$/.test(s.uri))) {
    for (const suite of s.suites.filter(x => !x.includes('-'))) add(s.uri, `${suite}-backports`, s.keyring ?? DEFAULT_KEYRING)
    for (const suite of ['stable', 'testing', 'unstable']) add(s.uri, suite, s.keyring ?? DEFAULT_KEYRING)
  }
  return out
}

/** Finds the `nodejs` source of Node major `major` on the configured mirror (see the module comment). */
async function resolveSource (major, { tmp, log, mirror, suite }) {
  const list = mirror && suite
    ? [{ uri: mirror.replace(/\/+$/, ''), suite, keyring: DEFAULT_KEYRING }]
    : candidates(aptSources())
  if (list.length === 0) throw new Error('no Debian entry in the apt sources (/etc/apt/sources.list{,.d}); set FASTSOCK_NODE_SUITE_MIRROR and FASTSOCK_NODE_SUITE_SUITE')
  for (const c of list) {
    const rel = await release(c.uri, c.suite, c.keyring, tmp)
    if (!rel) { log(`  ${c.uri} ${c.suite}: no such suite`); continue }
    const relFields = parseControl(rel)[0]
    const expected = sha256List(relFields.sha256)['main/source/Sources.xz']
    if (!expected) { log(`  ${c.uri} ${c.suite}: no main/source/Sources.xz`); continue }
    const xzFile = path.join(tmp, `${c.suite}.Sources.xz`)
    await download(`${c.uri}/dists/${c.suite}/main/source/Sources.xz`, xzFile)
    verifyFile(xzFile, expected, `${c.suite} Sources.xz`)
    const text = execFileSync('xz', ['-dc', xzFile], { maxBuffer: 1 << 30 }).toString()
    fs.rmSync(xzFile)
    const entry = nodejsEntry(text, major)
    if (!entry) { log(`  ${c.uri} ${c.suite} (${relFields.codename ?? '?'}): no nodejs ${major}.x`); continue }
    log(`  ${c.uri} ${c.suite} (${relFields.codename ?? '?'}): nodejs ${entry.version}`)
    return { mirror: c.uri, suite: c.suite, codename: relFields.codename ?? null, ...entry }
  }
  throw new Error(`no nodejs ${major}.x source package in ${list.map(c => c.suite).join(', ')}`)
}

/** The tools the fetch runs, by their Debian package (xz-utils is not in a minimal install). */
const TOOLS = { xz: 'xz-utils', gpgv: 'gpgv', tar: 'tar' }

/** Installs the missing tools with apt-get (as root, as CI runs); throws saying why it cannot. */
function ensureTools () {
  const missing = Object.keys(TOOLS).filter(tool => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0)
  if (missing.length === 0) return
  const why = apt.ensurePackages(missing.map(tool => TOOLS[tool]))
  if (why !== null) throw new Error(`node-suite: ${missing.join(', ')} not found: ${why}`)
}

/**
 * Makes sure Node's test files for Node major `major` (default: the running one) are in the cache;
 * returns `{ root, source }`:
 * `root` holds test/common, test/fixtures and test/parallel; `source` says where they came from
 * (mirror, suite, Debian version, orig tarball name and SHA-256).
 */
async function ensureTests (cacheDir, { log = console.error, major = Number(process.versions.node.split('.')[0]) } = {}) {
  const base = path.join(cacheDir, `node-${major}`)
  const sourceFile = path.join(base, 'source.json')
  if (fs.existsSync(sourceFile)) {
    const source = JSON.parse(fs.readFileSync(sourceFile, 'utf8'))
    const root = path.join(base, upstreamOf(source.version))
    if (fs.existsSync(path.join(root, '.complete'))) return { root, source }
  }
  ensureTools()
  fs.mkdirSync(base, { recursive: true })
  const tmp = fs.mkdtempSync(path.join(base, 'tmp-'))
  try {
    log(`node-suite: looking for Debian's nodejs ${major}.x source package on the apt mirror`)
    const source = await resolveSource(major, {
      tmp, log, mirror: process.env.FASTSOCK_NODE_SUITE_MIRROR, suite: process.env.FASTSOCK_NODE_SUITE_SUITE
    })
    const url = `${source.mirror}/${source.directory}/${source.orig.name}`
    log(`node-suite: downloading ${url} (${(source.orig.size / 1e6).toFixed(1)} MB)`)
    const tarball = path.join(tmp, source.orig.name)
    await download(url, tarball)
    verifyFile(tarball, source.orig, source.orig.name)
    const root = path.join(base, upstreamOf(source.version))
    fs.rmSync(root, { recursive: true, force: true })
    fs.mkdirSync(root, { recursive: true })
    execFileSync('tar', ['-xf', tarball, '-C', root, '--strip-components=1', '--wildcards',
      ...EXTRACT.map(p => `node-v*/${p}`)], { stdio: 'inherit' })
    fs.writeFileSync(path.join(root, '.complete'), '')
    fs.writeFileSync(sourceFile, JSON.stringify(source, null, 2) + '\n')
    return { root, source }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

module.exports = { ensureTests, aptSources, parseDeb822Sources, parseOneLineSources, parseControl, nodejsEntry, candidates, upstreamOf }
