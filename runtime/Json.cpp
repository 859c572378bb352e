//===- Json.cpp - the small JSON reader kiln-rt needs ---------------------===//

#include "runtime/Json.h"

#include <cstdlib>

using namespace kiln::rt;

namespace {
class Reader {
public:
  Reader(const std::string &text, std::string &error) : s(text), error(error) {}

  bool document(JsonValue &out) {
    if (!value(out, 0))
      return false;
    skip();
    if (pos != s.size())
      return fail("trailing characters");
    return true;
  }

private:
  bool fail(const char *what) {
    error = std::string("invalid JSON at byte ") + std::to_string(pos) + ": " + what;
    return false;
  }
  void skip() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\n' || s[pos] == '\t' || s[pos] == '\r'))
      ++pos;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }
  bool value(JsonValue &out, int depth) {
    if (depth > 64)
      return fail("nested too deeply");
    skip();
    if (pos >= s.size())
      return fail("unexpected end");
    char c = s[pos];
    if (c == '{')
      return object(out, depth);
    if (c == '[')
      return array(out, depth);
    if (c == '"') {
      out.kind = JsonValue::String;
      return string(out.string);
    }
    if (literal("true")) {
      out.kind = JsonValue::Bool;
      out.boolean = true;
      return true;
    }
    if (literal("false")) {
      out.kind = JsonValue::Bool;
      return true;
    }
    if (literal("null")) {
      out.kind = JsonValue::Null;
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      const char *begin = s.c_str() + pos;
      char *end = nullptr;
      out.kind = JsonValue::Number;
      out.number = std::strtod(begin, &end);
      if (end == begin)
        return fail("bad number");
      pos += end - begin;
      return true;
    }
    return fail("unexpected character");
  }
  bool string(std::string &out) {
    ++pos; // opening quote
    while (pos < s.size() && s[pos] != '"') {
      char c = s[pos++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= s.size())
        return fail("unterminated escape");
      char e = s[pos++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (pos + 4 > s.size())
          return fail("short \\u escape");
        unsigned code = std::strtoul(s.substr(pos, 4).c_str(), nullptr, 16);
        pos += 4;
        out += code < 0x80 ? char(code) : '?'; // metadata is ASCII
        break;
      }
      default: return fail("unknown escape");
      }
    }
    if (pos >= s.size())
      return fail("unterminated string");
    ++pos;
    return true;
  }
  bool array(JsonValue &out, int depth) {
    out.kind = JsonValue::Array;
    ++pos;
    skip();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    for (;;) {
      out.array.emplace_back();
      if (!value(out.array.back(), depth + 1))
        return false;
      skip();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }
  bool object(JsonValue &out, int depth) {
    out.kind = JsonValue::Object;
    ++pos;
    skip();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    for (;;) {
      skip();
      if (pos >= s.size() || s[pos] != '"')
        return fail("expected a key");
      std::string key;
      if (!string(key))
        return false;
      skip();
      if (pos >= s.size() || s[pos] != ':')
        return fail("expected ':'");
      ++pos;
      if (!value(out.object[key], depth + 1))
        return false;
      skip();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  const std::string &s;
  std::string &error;
  size_t pos = 0;
};
} // namespace

bool kiln::rt::parseJson(const std::string &text, JsonValue &out, std::string &error) {
  out = JsonValue();
  return Reader(text, error).document(out);
}
