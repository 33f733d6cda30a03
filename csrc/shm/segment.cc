#include "shm/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <new>

#include "sealed_memfd.h"

namespace fastsock {

bool ValidRingBytes(uint64_t n) {
  return n >= wire::kMinRingBytes && n <= wire::kMaxRingBytes && (n & (n - 1)) == 0;
}

Segment::~Segment() {
  if (base_) munmap(base_, map_bytes_);
}

void Segment::Release() {
  if (!base_) return;
  // One MAP_FIXED mapping replaces the four shared ones atomically: no moment where the range is
  // unmapped (a JS view touching it then would fault). Should it fail (ENOMEM for the new VMA),
  // the shared mapping stays until the destructor: the memory goes at the collection instead.
  mmap(base_, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

// One reservation of address space for the header and both rings, each ring mapped twice in a
// row (its mirror: a read or write across the end stays contiguous):
//
//   base: | header | c2s | c2s (mirror) | s2c | s2c (mirror) |
//   file: | 0      | H   | H            | H+c2s | H+c2s     |   (H = kSegmentHeaderBytes)
//
// Four MAP_FIXED mappings into it (header and the first c2s copy are one, contiguous in the
// file; the c2s mirror and the first s2c copy are contiguous in the file too, so the kernel
// keeps them as one VMA): 5 mmaps and 3 VMAs per end, one munmap to undo.
bool Segment::Map(int memfd, std::string* err) {
  const uint64_t h = wire::kSegmentHeaderBytes, c2s = c2s_bytes_, s2c = s2c_bytes_;
  map_bytes_ = h + 2 * c2s + 2 * s2c;
  void* base = mmap(nullptr, map_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    *err = std::string("reserving address space for the segment failed: ") + strerror(errno);
    return false;
  }
  base_ = static_cast<uint8_t*>(base);
  struct Piece { uint64_t at, bytes, offset; };
  const Piece pieces[] = {{0, h + c2s, 0}, {h + c2s, c2s, h}, {h + 2 * c2s, s2c, h + c2s}, {h + 2 * c2s + s2c, s2c, h + c2s}};
  for (const Piece& p : pieces) {
    if (mmap(base_ + p.at, p.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd, static_cast<off_t>(p.offset)) == MAP_FAILED) {
      *err = std::string("mmap of the segment failed: ") + strerror(errno);
      return false;  // the destructor unmaps the reservation
    }
  }
  header_ = reinterpret_cast<wire::SegmentHeader*>(base_);
  c2s_ = RingView(&header_->c2s, base_ + h, c2s_bytes_);
  s2c_ = RingView(&header_->s2c, base_ + h + 2 * c2s, s2c_bytes_);
  return true;
}

int Segment::Create(uint32_t c2s, uint32_t s2c, std::string* err) {
  if (!ValidRingBytes(c2s) || !ValidRingBytes(s2c)) {
    *err = "ring sizes must be powers of two from 4 KiB to 256 MiB";
    return -EINVAL;
  }
  uint64_t total = wire::kSegmentHeaderBytes + static_cast<uint64_t>(c2s) + s2c;
  int fd = CreateSealedMemfd("fastsock-shm", total);
  if (fd < 0) {
    *err = std::string("creating the sealed memfd failed: ") + strerror(-fd);
    return fd;
  }
  // Only the header is written, with pwrite: the rings are zero (a fresh memfd) and each end
  // maps them itself when it attaches, so creating costs no mapping at all.
  wire::SegmentHeader hd{};  // value-initialized: every counter and flag zero
  hd.magic = wire::kSegmentMagic;
  hd.version = wire::kSegmentVersion;
  hd.header_bytes = wire::kSegmentHeaderBytes;
  hd.ring_bytes_c2s = c2s;
  hd.ring_bytes_s2c = s2c;
  if (pwrite(fd, &hd, sizeof hd, 0) != static_cast<ssize_t>(sizeof hd)) {
    int e = errno;
    *err = std::string("writing the segment header failed: ") + strerror(e);
    close(fd);
    return -e;
  }
  return fd;
}

std::shared_ptr<Segment> Segment::Attach(int memfd, uint32_t c2s, uint32_t s2c, std::string* err) {
  if (!ValidRingBytes(c2s) || !ValidRingBytes(s2c)) {
    *err = "ring sizes out of range (powers of two from 4 KiB to 256 MiB)";
    return nullptr;
  }
  uint64_t total = wire::kSegmentHeaderBytes + static_cast<uint64_t>(c2s) + s2c;
  if (const char* why = SealedMemfdProblem(memfd, total)) {
    *err = std::string("the segment memfd: ") + why;
    return nullptr;
  }
  std::shared_ptr<Segment> seg(new Segment());
  seg->c2s_bytes_ = c2s;
  seg->s2c_bytes_ = s2c;
  if (!seg->Map(memfd, err)) return nullptr;
  const wire::SegmentHeader* hd = seg->header_;
  if (hd->magic != wire::kSegmentMagic || hd->version != wire::kSegmentVersion ||
      hd->header_bytes != wire::kSegmentHeaderBytes || hd->ring_bytes_c2s != c2s || hd->ring_bytes_s2c != s2c) {
    *err = "the segment header does not match the handshake";
    return nullptr;
  }
  close(memfd);
  return seg;
}

}  // namespace fastsock
