// SPDX-License-Identifier: BSD-3-Clause
// A member that most values never hold, kept out of line: a pointer while absent, read as T's
// default, made on the first write. Copies are deep, so the value that holds it stays a plain
// value. The companion's stored connections hold their details this way (companion/connection.h),
// subscriptions their rarely set texts (link/topic_mapping.h).
//
// Reading through a const reference never allocates; the non-const `*` and `->` make the value,
// so code that builds a value to keep reads its boxes through a const reference
// (tests/companion/connection_memory_test.cc holds the registry's bytes).
#pragma once

#include <memory>
#include <string>
#include <utility>

namespace mqc {

template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(const T& value) : value_(std::make_unique<T>(value)) {}  // NOLINT: a value's stand-in
  Boxed(const Boxed& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(const T& value) {
    **this = value;
    return *this;
  }
  Boxed& operator=(T&& value) {
    **this = std::move(value);
    return *this;
  }
  ~Boxed() = default;

  const T& operator*() const { return value_ ? *value_ : Default(); }
  const T* operator->() const { return &**this; }
  operator const T&() const { return **this; }  // NOLINT: read where a T is expected
  T& operator*() {
    if (!value_) value_ = std::make_unique<T>();
    return *value_;
  }
  T* operator->() { return &**this; }
  void reset() { value_.reset(); }
  // Whether it was ever written (a copy of a value that held none holds none).
  bool held() const { return value_ != nullptr; }

 private:
  static const T& Default() {
    static const T kDefault{};
    return kDefault;
  }
  std::unique_ptr<T> value_;
};

// A text kept only when there is one: an empty text leaves the box empty.
inline void SetUnlessEmpty(Boxed<std::string>* box, std::string text) {
  if (text.empty()) {
    box->reset();
  } else {
    *box = std::move(text);
  }
}

}  // namespace mqc
