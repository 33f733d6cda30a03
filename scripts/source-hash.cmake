# Writes OUT: #define FASTSOCK_SOURCE_HASH "<sha256>", the hash of every csrc/*.cc|*.h file as
# "<path relative to ROOT>:<sha256 of its bytes>\n", sorted by path. scripts/source-hash.js
# computes the same string, so a test can tell a stale prebuild from a current one.
file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/csrc/*.cc ${ROOT}/csrc/*.h)
list(SORT files)
set(manifest "")
foreach(f IN LISTS files)
  file(SHA256 ${ROOT}/${f} h)
  string(APPEND manifest "${f}:${h}\n")
endforeach()
string(SHA256 total "${manifest}")
file(WRITE ${OUT}.tmp "#define FASTSOCK_SOURCE_HASH \"${total}\"\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
