//===- FreshCache.h - a cache folder per test, and the devices to run on -*- C++ -*-===//
#pragma once

#include "kiln/kiln.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
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

/// Runs `body` with a Session on the CPU and one on Vulkan; a device that is
/// not present is skipped with a note.
inline void forEachDevice(const std::function<void(Session &, const std::string &)> &body) {
  for (const char *device : {"cpu", "vulkan"}) {
    Session s(device);
    if (!s.ok()) {
      std::printf("skipping %s: %s\n", device, s.status().message().c_str());
      continue;
    }
    body(s, device);
  }
}

} // namespace kiln::test
