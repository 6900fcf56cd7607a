// SPDX-License-Identifier: BSD-3-Clause
// What the benchmarks' command lines share: options given as "--name value" pairs, each value a
// whole number in its range, and a message on stderr for a bad one or a failed run.
#pragma once

#include <errno.h>  // program_invocation_short_name

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

namespace mqc::bench {

// "<program>: <message>" on stderr; returns the exit status of a failed run.
inline int Fail(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, message.c_str());
  return 1;
}

// An option, "--name value": the value goes to *value (which holds the default until then), if
// it lies in [min, max].
class NumberOption {
 public:
  NumberOption(const char* name, long min, long max, long* value)
      : name_(name), min_(min), max_(max), long_(value) {}
  NumberOption(const char* name, int min, int max, int* value)
      : name_(name), min_(min), max_(max), int_(value) {}

  const char* name() const { return name_; }
  // Whether `text` is a whole number in range; only then is it taken.
  bool Take(const char* text) const {
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || value < min_ || value > max_) return false;
    if (long_ != nullptr) *long_ = value;
    if (int_ != nullptr) *int_ = static_cast<int>(value);
    return true;
  }
  std::string Range() const { return std::to_string(min_) + " to " + std::to_string(max_); }

 private:
  const char* name_;
  long min_;
  long max_;
  long* long_ = nullptr;
  int* int_ = nullptr;
};

// Reads argv's "--name value" pairs into `options`; returns "" or what is wrong with them.
inline std::string ParseOptions(int argc, char** argv,
                                std::initializer_list<NumberOption> options) {
  if (argc % 2 == 0) return "every option takes a value";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const NumberOption* option = nullptr;
    for (const NumberOption& candidate : options) {
      if (name == candidate.name()) option = &candidate;
    }
    if (option == nullptr) return "unknown option " + name;
    if (!option->Take(argv[i + 1])) {
      return "bad value for " + name + ": " + argv[i + 1] + " (" + option->Range() + ")";
    }
  }
  return "";
}

}  // namespace mqc::bench
