//===- ReadFile.cpp - reading what users hand over, whole or not at all ---===//

#include "lib/Support/ReadFile.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln;

bool kiln::readInput(const std::string &path, std::string &out, std::string &error,
                     size_t limit) {
  bool isStdin = path == "-";
  int fd = isStdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    error = "it is a directory";
    if (!isStdin)
      ::close(fd);
    return false;
  }
  out.clear();
  error.clear();
  char chunk[1 << 16];
  while (true) {
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      error = std::strerror(errno);
      break;
    }
    if (got == 0)
      break;
    if (out.size() + size_t(got) > limit) {
      error = "it holds more than " + std::to_string(limit >> 20) + " MiB";
      break;
    }
    out.append(chunk, size_t(got));
  }
  if (!isStdin)
    ::close(fd);
  if (!error.empty()) {
    out.clear();
    return false;
  }
  return true;
}

std::string kiln::readRegularFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return "";
  struct stat st;
  std::string out;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    out.resize(size_t(st.st_size));
    size_t done = 0;
    while (done < out.size()) {
      ssize_t got = ::read(fd, &out[done], out.size() - done);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        break;
      done += size_t(got);
    }
    out.resize(done); // a file cut short meanwhile reads as what it holds
  }
  ::close(fd);
  return out;
}
