# Cross build of the addon for linux-arm64 (glibc) with Debian's g++-aarch64-linux-gnu:
#   cmake-js rebuild --arch arm64 --out build-arm64 --CDCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# (scripts/prebuild-arm64.js does this). The Node-API headers are architecture independent, so the
# host's node-api-headers and node-addon-api serve; so are rdma-core's, which CMakeLists.txt takes
# from FASTSOCK_RDMA_INCLUDE_DIR when the host has none.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_STRIP aarch64-linux-gnu-strip)
# Libraries and headers from the cross sysroot only; programs (cmake's, node's) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
