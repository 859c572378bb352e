//===- ReadFile.cpp - reading what users hand over, whole or not at all ---===//

#include "lib/Support/ReadFile.h"

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln;

/// Reads `fd` to its end into `out`: 0, or an errno (EFBIG past `limit` bytes).
static int readToEnd(int fd, size_t limit, std::string &out) {
  out.clear();
  char chunk[1 << 16];
  while (true) {
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return errno;
    if (got == 0)
      return 0;
    if (out.size() + size_t(got) > limit)
      return EFBIG;
    out.append(chunk, size_t(got));
  }
}

bool kiln::readInput(const std::string &path, std::string &out, std::string &error,
                     size_t limit) {
  bool isStdin = path == "-";
  int fd = isStdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  struct stat st;
  int problem = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) ? EISDIR : readToEnd(fd, limit, out);
  if (!isStdin)
    ::close(fd);
  if (problem) {
    out.clear();
    error = problem == EISDIR  ? "it is a directory"
            : problem == EFBIG ? "it holds more than " + std::to_string(limit >> 20) + " MiB"
                               : std::string(std::strerror(problem));
  }
  return !problem;
}

std::string kiln::readRegularFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return "";
  struct stat st;
  std::string out;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || readToEnd(fd, SIZE_MAX, out) != 0)
    out.clear();
  ::close(fd);
  return out;
}
