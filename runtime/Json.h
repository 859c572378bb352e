//===- Json.h - the small JSON reader kiln-rt needs -------------*- C++ -*-===//
//
// Kernel metadata travels as JSON. The runtime links no LLVM, so it carries its
// own reader: objects, arrays, strings (with \" \\ \n \t \uXXXX escapes), numbers,
// true/false/null. Malformed input is an error with a byte offset, never a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::rt {

struct JsonValue {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  const JsonValue *get(const std::string &key) const {
    auto it = object.find(key);
    return kind == Object && it != object.end() ? &it->second : nullptr;
  }
};

/// Parses `text`; on failure returns false and sets `error`.
bool parseJson(const std::string &text, JsonValue &out, std::string &error);

} // namespace kiln::rt
