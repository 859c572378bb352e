//===- Autotune.cpp - pick a kernel's params by timing candidates ---------===//
//
// Session::autotune compiles every candidate that is not cached yet in parallel
// (each compile owns its MLIR context), times each one on the caller's
// arguments with the device's events, and stores the winner in the cache under
// a key of source, kernel, candidates, device and shape bucket. A later run in
// the same bucket reads that choice and times nothing.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"

#include "lib/Session/SessionImpl.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <cstdio>
#include <map>
#include <thread>
#include <unistd.h>

using namespace kiln;

namespace {

std::string describe(const ParamSet &params) {
  std::string out;
  for (auto &[name, value] : params)
    out += (out.empty() ? "" : " ") + name + "=" + value;
  return out.empty() ? "(defaults)" : out;
}

/// "M,N" sizes of every tensor argument rounded up to powers of two: shapes in
/// one bucket share a tuning decision.
std::string shapeBucket(const std::vector<rt::Arg> &args) {
  std::string out;
  for (const rt::Arg &a : args) {
    if (!a.isTensor)
      continue;
    out += "[";
    for (int64_t size : a.sizes) {
      int64_t bucket = 1;
      while (bucket < size)
        bucket *= 2;
      out += std::to_string(bucket) + ",";
    }
    out += "]";
  }
  return out;
}

/// The stored choice: one `name=value` per line.
std::string serialize(const ParamSet &params) {
  std::string out;
  for (auto &[name, value] : params)
    out += name + "=" + value + "\n";
  return out;
}

std::optional<ParamSet> deserialize(const std::string &text,
                                    const std::vector<ParamSet> &candidates) {
  if (text.empty())
    return std::nullopt; // no stored choice
  ParamSet params;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      return std::nullopt; // truncated
    std::string line = text.substr(pos, end - pos);
    size_t eq = line.find('=');
    if (eq == std::string::npos)
      return std::nullopt;
    if (!params.emplace(line.substr(0, eq), line.substr(eq + 1)).second)
      return std::nullopt; // a param twice: damaged
    pos = end + 1;
  }
  // Only a choice among this run's candidates is trusted.
  if (std::find(candidates.begin(), candidates.end(), params) == candidates.end())
    return std::nullopt;
  return params;
}

} // namespace

std::vector<ParamSet>
Session::combinations(const std::map<std::string, std::vector<std::string>> &choices) {
  std::vector<ParamSet> out{{}};
  for (auto &[name, values] : choices) {
    std::vector<ParamSet> next;
    for (const ParamSet &partial : out)
      for (const std::string &value : values) {
        ParamSet p = partial;
        p[name] = value;
        next.push_back(std::move(p));
      }
    out = std::move(next);
  }
  return out;
}

TuneResult Session::autotune(const std::string &source, const std::string &kernelName,
                             const std::vector<ParamSet> &candidates,
                             const std::vector<rt::Arg> &args, const TuneOptions &options,
                             const std::string &filename) {
  TuneResult result;
  if (!ok() || candidates.empty()) {
    result.kernel.status_ = ok() ? rt::Status::failure("autotune needs at least one candidate")
                                 : status_;
    return result;
  }
  if (options.warmup < 0 || options.repeats < 1) {
    result.kernel.status_ = rt::Status::failure(
        "autotune times each candidate over TuneOptions::repeats >= 1 launches after warmup >= "
        "0, got repeats " +
        std::to_string(options.repeats) + " and warmup " + std::to_string(options.warmup));
    return result;
  }
  const std::string kernel = nameOrFirst(source, kernelName);
  bool progress = options.progress < 0 ? isatty(STDERR_FILENO) : options.progress > 0;

  // The decision's key: what was compiled, among which candidates, where, for
  // which shapes (not the file name: a moved file keeps its timings).
  std::string material = "kiln-tune-v1\n" + cacheKey(source, kernel, {}, "") + "\n" +
                         device_->name() + "\n" + shapeBucket(args) + "\n";
  for (const ParamSet &c : candidates)
    material += serialize(c) + ";\n";
  std::string tuneKey = session::hashKey(material);
  std::string tunePath = cacheDir_.empty() ? "" : cacheDir_ + "/" + tuneKey + ".tune";

  std::optional<ParamSet> stored;
  if (auto it = tuned_.find(tuneKey); it != tuned_.end())
    stored = it->second;
  else if (!tunePath.empty())
    stored = deserialize(session::readFile(tunePath), candidates);
  if (stored) {
    ++stats_.tuneHits;
    tuned_[tuneKey] = *stored;
    result.fromCache = true;
    result.params = *stored;
    result.kernel = compile(source, kernel, *stored, filename);
    if (progress)
      std::fprintf(stderr, "kiln: tune %s: cached choice %s\n", kernel.c_str(),
                   describe(*stored).c_str());
    return result;
  }
  ++stats_.tuneRuns;

  // Compile what the cache lacks, in parallel.
  size_t n = candidates.size();
  std::vector<std::string> keys(n);
  std::vector<Kernel> kernels(n);
  std::vector<size_t> missing;
  for (size_t i = 0; i < n; ++i) {
    keys[i] = cacheKey(source, kernel, candidates[i], filename);
    kernels[i].device_ = device_;
    kernels[i].name_ = kernel;
    kernels[i].status_ = rt::Status::success();
    if (!findCached(keys[i], kernel, kernels[i].module_))
      missing.push_back(i);
  }
  std::vector<rt::Result<session::Binary>> built(n, rt::Status::failure("not compiled"));
  {
    std::atomic<size_t> next{0}, done{0};
    unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(),
                                                        static_cast<unsigned>(missing.size())));
    std::string target = device_->target();
    auto work = [&] {
      for (size_t j; (j = next.fetch_add(1)) < missing.size();) {
        size_t i = missing[j];
        built[i] = session::compileBinary(source, filename, kernel, candidates[i], target,
                                          matrixUnits_);
        size_t finished = done.fetch_add(1) + 1;
        if (progress)
          std::fprintf(stderr, "kiln: tune %s: compiled %zu/%zu\n", kernel.c_str(), finished,
                       missing.size());
      }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w)
      pool.emplace_back(work);
    work();
    for (std::thread &t : pool)
      t.join();
  }
  for (size_t i : missing) {
    if (!built[i]) {
      kernels[i].status_ = built[i].status();
      continue;
    }
    auto module = addToCache(keys[i], built[i]->binary, built[i]->metadata);
    if (module)
      kernels[i].module_ = *module;
    else
      kernels[i].status_ = module.status();
  }

  // Candidates that compiled to the same binary (their differences are params
  // this target ignores) are timed once.
  std::map<std::string, int> firstWithBinary;
  std::vector<int> sameCode(n, -1);
  for (size_t i : missing)
    if (built[i] && kernels[i].ok()) {
      auto [it, inserted] = firstWithBinary.emplace(built[i]->binary, static_cast<int>(i));
      if (!inserted)
        sameCode[i] = it->second;
    }

  // Time each candidate: warm-up launches, then `repeats` between two events.
  int best = -1;
  for (size_t i = 0; i < n; ++i) {
    TuneTrial trial;
    trial.params = candidates[i];
    if (sameCode[i] >= 0) {
      const TuneTrial &twin = result.trials[sameCode[i]];
      trial.milliseconds = twin.milliseconds;
      trial.error = twin.error;
      trial.sameCodeAs = sameCode[i];
      if (progress)
        std::fprintf(stderr, "kiln: tune %s: [%zu/%zu] %s: same code as [%d]\n", kernel.c_str(),
                     i + 1, n, describe(trial.params).c_str(), sameCode[i] + 1);
      result.trials.push_back(std::move(trial));
      continue;
    }
    rt::Status status = kernels[i].status();
    for (int w = 0; status.ok() && w < options.warmup; ++w)
      status = kernels[i].launch(args);
    auto start = status.ok() ? device_->record() : rt::Result<rt::Event>(status);
    const int repeats = options.repeats;
    for (int r = 0; start && status.ok() && r < repeats; ++r)
      status = kernels[i].launch(args);
    auto end = start && status.ok() ? device_->record() : rt::Result<rt::Event>(status);
    if (!start || !end) {
      trial.error = (!start ? start.status() : end.status()).message();
    } else {
      trial.milliseconds = end->since(*start) / repeats;
      if (best < 0 || trial.milliseconds < result.trials[best].milliseconds)
        best = static_cast<int>(i);
    }
    if (progress)
      std::fprintf(stderr, "kiln: tune %s: [%zu/%zu] %s: %s\n", kernel.c_str(), i + 1, n,
                   describe(trial.params).c_str(),
                   trial.error.empty() ? (std::to_string(trial.milliseconds) + " ms").c_str()
                                       : ("failed: " + trial.error).c_str());
    result.trials.push_back(std::move(trial));
  }
  if (best < 0) {
    result.kernel.status_ = rt::Status::failure("autotune: every candidate failed; the first: " +
                                                result.trials.front().error);
    return result;
  }
  result.params = candidates[best];
  result.kernel = kernels[best];
  tuned_[tuneKey] = result.params;
  if (!tunePath.empty())
    writeAtomically(tunePath, serialize(result.params));
  if (progress)
    std::fprintf(stderr, "kiln: tune %s: best %s (%.4f ms)\n", kernel.c_str(),
                 describe(result.params).c_str(), result.trials[best].milliseconds);
  return result;
}

TuneResult Session::autotune(const std::string &source, const std::string &kernelName,
                             const std::vector<rt::Arg> &args, const TuneOptions &options,
                             const std::string &filename) {
  const std::string kernel = nameOrFirst(source, kernelName);
  // The declared choices are in the metadata of the default build.
  Kernel defaults = compile(source, kernel, {}, filename);
  if (!defaults.ok()) {
    TuneResult result;
    result.kernel = defaults;
    return result;
  }
  std::map<std::string, std::vector<std::string>> choices;
  for (const ParamValue &p : defaults.info()->params)
    if (!p.tune.empty())
      choices[p.name] = p.tune;
  if (choices.empty()) {
    TuneResult result;
    result.kernel.status_ = rt::Status::failure(
        "kernel '" + kernel + "' declares no tune values (write `BM: i32 = 64 tune [32, 64]` "
        "in its params, or pass candidates)");
    return result;
  }
  return autotune(source, kernel, combinations(choices), args, options, filename);
}
