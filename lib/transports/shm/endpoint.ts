/**
 * The shm rung's endpoint as the stream core drives it: the native ShmEndpoint
 * (csrc/shm/endpoint.h) with its per-message checks moved into JS. The rings' control blocks
 * sit in shared memory that the addon exposes as an ArrayBuffer (`controlView()`, fields at the
 * offsets `ShmEndpoint.controlLayout` exports, as udx-native exports its stats offsets), so
 * `state()` and `readable()` are a few loads instead of a native call on every pump turn, and
 * `read()` returns nothing without a call when the ring is empty.
 *
 * A corked batch of small writes (`writev`) is copied into the transmit ring from JS, through
 * the ring's mirrored mapping (`txRegion()`, from the connection's JS_COPY_AFTER-th writev on:
 * any run of up to the ring's size is contiguous), then published with one native `commit(n)`
 * (release store of head, then the doorbell check), at least every PUBLISH_BYTES. A TypedArray.set of a small view
 * costs less than the two N-API calls per view a native writev spends on reading the array
 * (docs/transports.md, "Set-up time", has the figures); views larger than JS_COPY_MAX_BYTES, or not
 * Uint8Arrays, go to the native writev, which publishes large copies in pieces as it goes.
 *
 * At close the shared pages under the views become private zero pages (the segment's memory goes
 * at once; the views are never detached, which would slow every typed array in the process:
 * docs/design.md, "The shared-memory rung"): every method checks the local CLOSED bit before it
 * touches them.
 *
 * Memory ordering: the native side publishes head and the producer's flags with release stores;
 * JS reads them with Atomics.load (sequentially consistent: a plain load on x86-64, a load-acquire
 * on arm64), flags before head, as the native state() does, so a reader that sees EOF also sees
 * every byte written before it. What JS reads is a hint for deciding what to do next: bytes are
 * only ever moved by native calls that synchronize themselves, and an empty-looking ring goes to
 * armRead(), which re-checks after raising its flag (csrc/shm/ring.h), so no stale load strands
 * a byte.
 *
 * Receive memory for 'data' is pooled, as Buffer.allocUnsafe pools small buffers: chunks of up
 * to POOLED_CHUNK_BYTES are read into one per-thread slab of SLAB_BYTES and handed out as
 * Buffer views of it (one allocation per slab, not per chunk); a chunk that does not fit the
 * rest of the slab starts a new slab; larger chunks get a Buffer of their own. A chunk's
 * `.buffer` is then the slab (other chunks' bytes, of this thread's connections), as with any
 * pooled Buffer; a kept small chunk keeps its slab alive.
 */
import { native, NativeCore, ShmEndpointNative } from '../../native'

/** Where the fields of one ring's control block are (bytes), and the producer's flag bits. */
export interface ControlLayout {
  bytes: number
  head: number
  producerFlags: number
  tail: number
  consumerWaiting: number
  producerWaiting: number
  ringEof: number
  ringReset: number
  headerBytes: number
}

/** What csrc/shm/endpoint_datapath.cc's controlView() returns. */
export interface ControlView {
  /** The segment's header page (shared with the peer): both control blocks. */
  control: ArrayBuffer
  /** Byte offsets of this end's receive and transmit rings' control blocks in `control`. */
  rx: number
  tx: number
  /** Its first u32: this end's local state bits (streamState GONE | CLOSED). */
  local: ArrayBuffer
}

/** The native endpoint with the calls this module uses beyond StreamEndpoint. */
export interface ShmEndpointCore extends ShmEndpointNative {
  /** Bytes of views[index] (from byte `offset`), views[index + 1]... copied in, as far as they fit. */
  writev (views: ArrayBufferView[], index: number, offset: number): number
  /** Bytes copied into view[offset, offset + maxBytes). */
  readInto (view: ArrayBufferView, offset?: number, maxBytes?: number): number
  /** The views this module reads and copies into (csrc/shm/endpoint_datapath.cc), the same object on every call. */
  controlView (): ControlView
}

type ShmEndpointArgs = ConstructorParameters<NativeCore['ShmEndpoint']>
/** The constructor's arguments but the last (`onevent`: newShmEndpoint routes it, setOnEvent). */
type ShmEndpointSetupArgs = ShmEndpointArgs extends [...infer A, () => void] ? A : never
type NativeShmEndpointClass = (new (...args: ShmEndpointArgs) => ShmEndpointCore) & { controlLayout: ControlLayout }

/** Bytes of one receive slab (Node's stream reads allocate 64 KiB per read). */
export const SLAB_BYTES = 64 * 1024
/** Chunks up to this size are read into the slab; larger ones get their own Buffer. */
export const POOLED_CHUNK_BYTES = 8 * 1024
/** Views up to this size are copied into the transmit ring from JS (writev). */
export const JS_COPY_MAX_BYTES = 4 * 1024
/**
 * The JS copy path starts at a connection's JS_COPY_AFTER-th writev; the first ones go to the
 * native writev. Its view of the ring (txRegion()) is an ArrayBuffer of 2 x the ring's size that
 * V8 counts as external memory until the view is collected: made for every connection, short ones
 * included, it brought a garbage collection every few connections (`node --expose-gc
 * bench/soak.js --only shm --cycles 3000`, connect / echo / close in one process: 1,186 µs a
 * cycle with the view made at every connect, 864 made at the 16th write, 849 with the views
 * detached at close as before, which slowed every typed array of the process: docs/design.md).
 */
export const JS_COPY_AFTER = 16
/** A JS-copied batch is published (commit) at least every this many bytes. */
export const PUBLISH_BYTES = 64 * 1024

let slab: Buffer | null = null
let slabOffset = 0

let cls: (new (...args: ShmEndpointArgs) => ShmEndpointCore) | null = null

/**
 * The endpoint class (the native one, extended; the native one alone when the binary has no
 * controlView); needs the native core.
 */
export function shmEndpointClass (): new (...args: ShmEndpointArgs) => ShmEndpointCore {
  if (cls !== null) return cls
  const Base = native!.ShmEndpoint as unknown as NativeShmEndpointClass
  const L = Base.controlLayout
  // A binary built before controlView existed, or a big-endian host (the low word of a u64 is
  // read at its offset): the native endpoint as it is (one call per check).
  const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1
  if (L === undefined || typeof Base.prototype.controlView !== 'function' || !littleEndian) return (cls = Base)
  const S = native!.streamState
  class JsShmEndpoint extends Base {
    /** The header page as u32 words, and the indices of the fields read per message. */
    private readonly ctl: Uint32Array
    private readonly rxHead: number
    private readonly rxTail: number
    private readonly rxFlags: number
    private readonly txHead: number
    private readonly txTail: number
    /** The transmit ring's mirrored mapping (2 x its size, txRegion()), once this end has written JS_COPY_AFTER times. */
    private tx: Uint8Array | null = null
    private writes = 0
    /** This end's local state bits (GONE, CLOSED), kept by the native side. */
    private readonly local: Uint32Array

    constructor (...args: ShmEndpointArgs) {
      super(...args)
      const v = this.controlView()
      this.ctl = new Uint32Array(v.control)
      // Low words of the little-endian u64 head and tail (a difference fits in 32 bits).
      this.rxHead = (v.rx + L.head) >>> 2
      this.rxTail = (v.rx + L.tail) >>> 2
      this.rxFlags = (v.rx + L.producerFlags) >>> 2
      this.txHead = (v.tx + L.head) >>> 2
      this.txTail = (v.tx + L.tail) >>> 2
      this.local = new Uint32Array(v.local, 0, 1)
    }

    /** Unread bytes in the receive ring (a hint: see the module comment). */
    override readable (): number {
      if (this.local[0] & S.CLOSED) return 0
      return (Atomics.load(this.ctl, this.rxHead) - this.ctl[this.rxTail]) >>> 0
    }

    /** The state bits (csrc/stream_state.h) from the control block and the local word. */
    override state (): number {
      let s = this.local[0]
      if (s & S.CLOSED) return S.CLOSED
      const f = Atomics.load(this.ctl, this.rxFlags) // before head: EOF implies its bytes
      if (f & L.ringEof) s |= S.EOF
      if (f & L.ringReset) s |= S.RESET
      if (Atomics.load(this.ctl, this.rxHead) !== this.ctl[this.rxTail]) s |= S.READABLE
      return s
    }

    /**
     * Bytes of views[index] (from byte `offset`), views[index + 1]... copied into the transmit
     * ring, in order, as far as they fit; published before it returns. Returns the bytes moved.
     */
    override writev (views: ArrayBufferView[], index: number, offset: number): number {
      if (this.local[0] & S.CLOSED) return 0
      let tx = this.tx
      if (tx === null) {
        if (++this.writes < JS_COPY_AFTER) return super.writev(views, index, offset)
        tx = this.tx = new Uint8Array(this.txRegion())
      }
      const size = tx.length >>> 1
      const head = this.ctl[this.txHead] // this end's own counter
      const used = (head - Atomics.load(this.ctl, this.txTail)) >>> 0 // tail: acquire
      const room = used >= size ? 0 : size - used
      const at = head & (size - 1)
      let done = 0
      let pending = 0
      let i = index
      let off = offset
      while (i < views.length && done < room) {
        const v = views[i]
        if (!(v instanceof Uint8Array) || v.length - off > JS_COPY_MAX_BYTES) break
        let k = v.length - off
        if (k > room - done) k = room - done
        tx.set(off === 0 && k === v.length ? v : v.subarray(off, off + k), at + done)
        done += k
        pending += k
        off += k
        if (pending >= PUBLISH_BYTES) {
          this.commit(pending)
          pending = 0
        }
        if (off < v.length) break // the ring is full
        i++
        off = 0
      }
      if (pending > 0) this.commit(pending)
      // A large view (or not a Uint8Array) next: the native writev takes it from here.
      if (i < views.length && done < room) done += super.writev(views, i, off)
      return done
    }

    /**
     * Whether to leave the bytes there for the loop to hand over in their turn (native: another
     * connection of the loop is ready first). Without bytes there is nothing to order: no call.
     */
    override yieldRead (): boolean {
      if (this.local[0] & S.CLOSED) return false
      return Atomics.load(this.ctl, this.rxHead) !== this.ctl[this.rxTail] && super.yieldRead()
    }

    /** At most maxBytes of what is there, in pooled memory when small; null when empty. */
    override read (maxBytes: number): Buffer | null {
      const avail = this.readable()
      if (avail === 0) return null
      const n = avail < maxBytes ? avail : maxBytes
      if (n > POOLED_CHUNK_BYTES) return super.read(n) as Buffer | null
      if (slab === null || SLAB_BYTES - slabOffset < n) {
        slab = Buffer.allocUnsafeSlow(SLAB_BYTES)
        slabOffset = 0
      }
      const start = slabOffset
      const got = this.readInto(slab, start, n)
      if (got === 0) return null
      slabOffset = (start + got + 7) & ~7 // 8-byte aligned, as Node's pool
      return slab.subarray(start, start + got)
    }
  }
  cls = JsShmEndpoint
  return cls
}

/** The shm endpoint as the stream core drives it: the whole StreamEndpoint table. */
export type ShmEndpoint = ShmEndpointCore

/** An endpoint's events before its stream core binds them (setOnEvent), and after it closed. */
function noEvents (): void {}

/**
 * A connected shm endpoint (the constructor's arguments but `onevent`), with `setOnEvent`: the
 * endpoint is made during the set-up, its stream core only when the socket adopts the channel,
 * so the native `onevent` goes through one relay the stream core binds (contract.ts
 * StreamEndpoint.setOnEvent). Throws as the constructor does (it owns the fds also then).
 */
export function newShmEndpoint (...args: ShmEndpointSetupArgs): ShmEndpoint {
  let target: () => void = noEvents
  const ep = new (shmEndpointClass())(...args, () => target()) as ShmEndpoint
  ep.setOnEvent = fn => { target = fn }
  return ep
}
