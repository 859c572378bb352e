# Writes OUT: `#define KILN_BUILD_ID "<sha256 of the compiler sources under ROOT>"`.
# Run at build time by lib/CMakeLists.txt whenever one of those sources changes.
file(GLOB_RECURSE files
  ${ROOT}/lib/*.cpp ${ROOT}/lib/*.h
  ${ROOT}/passes/*.cpp ${ROOT}/passes/*.h ${ROOT}/passes/*.td
  ${ROOT}/codegen/*.cpp ${ROOT}/codegen/*.h
  ${ROOT}/dialects/*.cpp ${ROOT}/dialects/*.h ${ROOT}/dialects/*.td)
list(SORT files)
set(digests "")
foreach(f IN LISTS files)
  file(SHA256 ${f} d)
  file(RELATIVE_PATH rel ${ROOT} ${f})
  string(APPEND digests "${rel} ${d}\n")
endforeach()
string(SHA256 id "${digests}")
string(SUBSTRING ${id} 0 16 id)
set(content "#pragma once\n#define KILN_BUILD_ID \"${id}\"\n")
file(WRITE ${OUT} "${content}")
