//===- FreshCache.h - a kernel cache folder of its own per test -*- C++ -*-===//
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace kiln::test {

/// A fresh cache folder per test, set through KILN_CACHE_DIR and removed after.
class FreshCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln-cache-test-XXXXXX";
    dir = mkdtemp(tmpl);
    setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    (void)std::system(cmd.c_str());
    unsetenv("KILN_CACHE_DIR");
  }
  std::string dir;
};

} // namespace kiln::test
