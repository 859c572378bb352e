//===- ReadFile.h - a whole file as bytes, for tests ------------*- C++ -*-===//
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace kiln::test {

/// The file's bytes; empty when it cannot be read (a load of it then fails
/// with the runtime's own message).
inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace kiln::test
