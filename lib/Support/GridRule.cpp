//===- GridRule.cpp - evaluating a kernel's grid rule at launch -----------===//
//
// kilnc prints each grid dimension as a fully parenthesized integer expression
// (params substituted), and every launcher, kiln-rt's and the in-process CPU
// executable's, evaluates that text here, so one rule gives one grid everywhere.
// The arithmetic is exact: a value that leaves 64 bits, a cast that would change
// its value, or a dimension beyond i32 is an error, never a wrapped grid.
//
//===----------------------------------------------------------------------===//

#include "lib/Support/GridRule.h"
#include "lib/Support/ValidateArgs.h"

#include "kiln/DType.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

using namespace kiln;

namespace {

/// Binary operators, longest spelling first, with C's precedence.
struct BinaryOp {
  const char *spelling;
  int precedence;
};
constexpr BinaryOp kBinaryOps[] = {
    {"||", 1}, {"&&", 2}, {"==", 6}, {"!=", 6}, {"<=", 7}, {">=", 7}, {"<<", 8}, {">>", 8},
    {"|", 3},  {"^", 4},  {"&", 5},  {"<", 7},  {">", 7},  {"+", 9},  {"-", 9},  {"*", 10},
    {"/", 10}, {"%", 10},
};

/// The names a rule may read: sizes and integer scalars, and tensors for
/// `x.size(d)` and `x.stride(d)`.
struct Bindings {
  std::map<std::string, int64_t> values;
  std::set<std::string> beyond64; // u64 scalars past INT64_MAX
  std::map<std::string, const TensorRef *> tensors;
};

/// Recursive descent over the rule text: integers, names, `x.size(d)`,
/// `x.stride(d)`, unary `-`, `~`, `!`, binary operators, and calls of cdiv, min,
/// max, cast<T> and num_processors.
class RuleEvaluator {
public:
  RuleEvaluator(const std::string &text, const Bindings &names, int64_t processors,
                std::string &error)
      : s(text), names(names), processors(processors), error(error) {}

  bool run(int64_t &out) {
    if (!expr(out, 0))
      return false;
    skip();
    if (pos != s.size())
      return fail("unexpected text");
    return true;
  }

private:
  bool fail(const std::string &what) {
    error = "grid rule '" + s + "': " + what;
    return false;
  }
  bool overflow() { return fail("a value leaves the 64-bit integers"); }
  void skip() {
    while (pos < s.size() && s[pos] == ' ')
      ++pos;
  }
  bool eat(char c) {
    skip();
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  const BinaryOp *peekOperator() {
    skip();
    for (const BinaryOp &op : kBinaryOps)
      if (s.compare(pos, std::char_traits<char>::length(op.spelling), op.spelling) == 0)
        return &op;
    return nullptr;
  }

  bool expr(int64_t &out, int minPrec) {
    if (!primary(out))
      return false;
    while (const BinaryOp *op = peekOperator()) {
      if (op->precedence < minPrec)
        return true;
      pos += std::char_traits<char>::length(op->spelling);
      int64_t rhs;
      if (!expr(rhs, op->precedence + 1) || !apply(op->spelling, out, rhs))
        return false;
    }
    return true;
  }

  bool apply(const std::string &op, int64_t &out, int64_t rhs) {
    if (op == "+")
      return !__builtin_add_overflow(out, rhs, &out) || overflow();
    if (op == "-")
      return !__builtin_sub_overflow(out, rhs, &out) || overflow();
    if (op == "*")
      return !__builtin_mul_overflow(out, rhs, &out) || overflow();
    if (op == "/" || op == "%") {
      if (rhs == 0)
        return fail("division by zero");
      if (out == INT64_MIN && rhs == -1)
        return overflow();
      out = op == "/" ? out / rhs : out % rhs; // truncating, as the kernel divides
      return true;
    }
    if (op == "<<" || op == ">>") {
      if (rhs < 0 || rhs > 63)
        return fail("shift by " + std::to_string(rhs) + " (it must be 0 to 63)");
      if (op == ">>") {
        out >>= rhs; // arithmetic
        return true;
      }
      int64_t shifted = static_cast<int64_t>(static_cast<uint64_t>(out) << rhs);
      if ((shifted >> rhs) != out)
        return overflow();
      out = shifted;
      return true;
    }
    if (op == "&") out &= rhs;
    else if (op == "|") out |= rhs;
    else if (op == "^") out ^= rhs;
    else if (op == "&&") out = out != 0 && rhs != 0;
    else if (op == "||") out = out != 0 || rhs != 0;
    else if (op == "==") out = out == rhs;
    else if (op == "!=") out = out != rhs;
    else if (op == "<") out = out < rhs;
    else if (op == "<=") out = out <= rhs;
    else if (op == ">") out = out > rhs;
    else if (op == ">=") out = out >= rhs;
    return true;
  }

  bool primary(int64_t &out) {
    if (++depth > 64)
      return fail("nested too deeply");
    skip();
    if (pos >= s.size())
      return fail("unexpected end");
    char c = s[pos];
    if (c == '(') {
      ++pos;
      if (!expr(out, 1))
        return false;
      return eat(')') || fail("expected ')'");
    }
    if (c == '-' || c == '~' || c == '!') {
      ++pos;
      if (!primary(out))
        return false;
      if (c == '-' && out == INT64_MIN)
        return overflow();
      out = c == '-' ? -out : c == '~' ? ~out : out == 0;
      return true;
    }
    if (isdigit(static_cast<unsigned char>(c))) {
      out = 0;
      while (pos < s.size() && isdigit(static_cast<unsigned char>(s[pos])))
        if (__builtin_mul_overflow(out, 10, &out) ||
            __builtin_add_overflow(out, s[pos++] - '0', &out))
          return fail("number too large");
      return true;
    }
    std::string name = identifier();
    if (name.empty())
      return fail("unexpected character");
    if (name == "cast" && eat('<'))
      return cast(out);
    if (eat('.'))
      return method(name, out);
    if (eat('('))
      return call(name, out);
    if (names.beyond64.count(name))
      return fail("'" + name + "' is beyond the 64-bit integers");
    auto it = names.values.find(name);
    if (it == names.values.end())
      return fail("unknown name '" + name + "'");
    out = it->second;
    return true;
  }

  std::string identifier() {
    skip();
    std::string name;
    while (pos < s.size() && (isalnum(static_cast<unsigned char>(s[pos])) || s[pos] == '_'))
      name += s[pos++];
    return name;
  }

  /// Comma-separated expressions up to ')' (the '(' is read).
  bool arguments(std::vector<int64_t> &args) {
    if (eat(')'))
      return true;
    for (;;) {
      int64_t v;
      if (!expr(v, 1))
        return false;
      args.push_back(v);
      if (eat(')'))
        return true;
      if (!eat(','))
        return fail("expected ',' or ')'");
    }
  }

  /// `cast<T>(x)` after `cast<`: an integer type that holds x exactly.
  bool cast(int64_t &out) {
    std::string type = identifier();
    std::optional<DType> dtype = parseDType(type);
    if (!dtype || isFloat(*dtype) || !eat('>') || !eat('('))
      return fail("expected an integer type in cast<T>(...)");
    std::vector<int64_t> args;
    if (!arguments(args))
      return false;
    if (args.size() != 1)
      return fail("cast takes one value");
    out = args[0];
    // Values here are exact, so a negative one fits no unsigned type (not even
    // u64, whose launch arguments are bits).
    if (!integerFits(out, *dtype) || (isUnsigned(*dtype) && out < 0))
      return fail("cast<" + type + ">(" + std::to_string(out) + ") would change the value");
    return true;
  }

  /// `x.size(d)` or `x.stride(d)` after `x.`.
  bool method(const std::string &tensor, int64_t &out) {
    std::string name = identifier();
    if ((name != "size" && name != "stride") || !eat('('))
      return fail("expected " + tensor + ".size(d) or " + tensor + ".stride(d)");
    std::vector<int64_t> args;
    if (!arguments(args))
      return false;
    if (args.size() != 1)
      return fail(tensor + "." + name + " takes one dimension");
    auto it = names.tensors.find(tensor);
    if (it == names.tensors.end())
      return fail("unknown tensor '" + tensor + "'");
    const std::vector<int64_t> &values =
        name == "size" ? it->second->sizes : it->second->strides;
    int64_t d = args[0];
    if (d < 0 || d >= static_cast<int64_t>(values.size()))
      return fail(tensor + "." + name + "(" + std::to_string(d) + "): no such dimension");
    out = values[d];
    return true;
  }

  /// `name(args)` after the '('.
  bool call(const std::string &name, int64_t &out) {
    std::vector<int64_t> args;
    if (!arguments(args))
      return false;
    if (name == "cdiv" && args.size() == 2) {
      if (args[1] <= 0)
        return fail("cdiv by a non-positive number");
      if (args[0] > INT64_MAX - args[1])
        return overflow();
      out = (args[0] + args[1] - 1) / args[1];
    } else if ((name == "min" || name == "max") && args.size() == 2) {
      out = name == "min" ? std::min(args[0], args[1]) : std::max(args[0], args[1]);
    } else if (name == "num_processors" && args.empty()) {
      out = processors;
    } else {
      return fail("unknown function '" + name + "'");
    }
    return true;
  }

  const std::string &s;
  const Bindings &names;
  int64_t processors;
  std::string &error;
  size_t pos = 0;
  int depth = 0;
};

} // namespace

bool kiln::evaluateGrid(const KernelInfo &kernel, const std::vector<KernelArg> &args,
                        int64_t processors, std::array<int64_t, 3> &grid, std::string &error) {
  Bindings names;
  for (size_t i = 0; i < kernel.args.size() && i < args.size(); ++i) {
    const ArgInfo &info = kernel.args[i];
    if (info.isTensor) {
      names.tensors.emplace(info.name, &args[i].tensor);
      for (size_t d = 0; d < info.dims.size() && d < args[i].tensor.sizes.size(); ++d)
        names.values.emplace(info.dims[d], args[i].tensor.sizes[d]);
    } else if (info.dtype == DType::U64 && args[i].scalar.i < 0) {
      names.beyond64.insert(info.name);
    } else if (!isFloat(info.dtype)) {
      names.values.emplace(info.name, args[i].scalar.i);
    }
  }
  for (int d = 0; d < 3; ++d) {
    if (d >= static_cast<int>(kernel.grid.size())) {
      grid[d] = 1;
      continue;
    }
    RuleEvaluator eval(kernel.grid[d], names, processors, error);
    if (!eval.run(grid[d]))
      return false;
    if (grid[d] < 0 || grid[d] > INT32_MAX) {
      error = "grid rule '" + kernel.grid[d] + "' gave " + std::to_string(grid[d]) +
              " programs along axis " + std::to_string(d) +
              (grid[d] < 0 ? "" : ", beyond i32 (program ids are i32)");
      return false;
    }
  }
  return true;
}
