// Status.h -- the error tier for environment failures (docs/architecture.md §Error policy): files,
// data sets, checkpoints, devices. A Status is ok or carries a message that
// says what failed and what to do; Expected<T> is a value or such a message.
// No exception crosses a library boundary, so fallible runtime functions
// return these instead.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace netc {

/// An error message (what failed, where, and what to do about it).
struct Error {
  std::string message;
};

/// Builds an Error; converts to any Status or Expected<T>.
inline Error fail(std::string message) {
  return Error{std::move(message)};
}

/// Success, or an Error.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message)), failed_(true) {}
  static Status success() { return Status(); }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return error_; }

private:
  std::string error_;
  bool failed_ = false;
};

/// A value of type T, or an Error.
template <class T> class [[nodiscard]] Expected {
public:
  Expected(T value) : state_(std::move(value)) {}
  Expected(Error error) : state_(std::move(error)) {}
  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T &value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T &value() const & {
    assert(ok());
    return std::get<0>(state_);
  }
  T &&value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  /// The value, or `fallback` on error.
  T value_or(T fallback) const & { return ok() ? std::get<0>(state_) : std::move(fallback); }
  const std::string &message() const {
    assert(!ok());
    return std::get<1>(state_).message;
  }
  /// The error as a Status (for propagating).
  Status status() const { return ok() ? Status() : Status(std::get<1>(state_)); }
  Error error() const { return std::get<1>(state_); }

private:
  std::variant<T, Error> state_;
};

} // namespace netc
