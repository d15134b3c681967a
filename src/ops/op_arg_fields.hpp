// ops/op_arg_fields.hpp: a library op's typed arguments (its Args struct) read from a call's
// values and written back, in declaration order, from one list of the struct's members. The list
// is the only place C++ states that order (it was an enum, a hand-written unpack and a pack, each
// spelling it again); the declaration's own list stays the names, kinds and rules.
// Invariants: the list has one entry per declared argument, of the declared kind, checked by
// require_arg_fields when the declaration is built; an argument the struct does not hold (a scratch the call reads on
// its own) stands as kNotInArgs. Conversions: a DevicePtr is its address, a uint32 its value, a float its IEEE bits, a
// bool or a two-value enum 1 for true (the second enumerator) and anything else false (the first), as a scalar declared
// in [0, 1] is; write(read(v)) gives v back for every value those rules keep. Inline templates: read is on every call's
// path and compiles to the loads a hand-written unpack made.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "metrale/gpu/device_handles.hpp"
#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

// The place of an argument the typed struct does not hold.
struct NotInArgs {};
inline constexpr NotInArgs kNotInArgs{};

// What a place of the list reads, for the check against the declaration (require_arg_fields).
enum class ArgFieldKind : std::uint8_t { kPointer, kScalar, kFlag, kNotHeld };

namespace arg_fields_detail {

template <typename Args, auto Member>
constexpr ArgFieldKind kind_of() {
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(Member)>, NotInArgs>) {
    return ArgFieldKind::kNotHeld;
  } else {
    using Value = std::remove_cvref_t<decltype(std::declval<Args&>().*Member)>;
    if constexpr (std::is_same_v<Value, DevicePtr>) {
      return ArgFieldKind::kPointer;
    } else if constexpr (std::is_same_v<Value, bool> || std::is_enum_v<Value>) {
      return ArgFieldKind::kFlag;
    } else {
      return ArgFieldKind::kScalar;
    }
  }
}

template <typename Value>
Value from_value(std::uint64_t value) {
  if constexpr (std::is_same_v<Value, DevicePtr>) {
    return DevicePtr{value};
  } else if constexpr (std::is_same_v<Value, bool>) {
    return value == 1;
  } else if constexpr (std::is_same_v<Value, float>) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(value));
  } else if constexpr (std::is_enum_v<Value>) {
    return static_cast<Value>(value == 1 ? 1 : 0);
  } else {
    static_assert(std::is_same_v<Value, std::uint32_t>, "an op argument is a DevicePtr, uint32, float, bool or enum");
    return static_cast<std::uint32_t>(value);
  }
}

template <typename Value>
std::uint64_t to_value(const Value& value) {
  if constexpr (std::is_same_v<Value, DevicePtr>) {
    return value.address;
  } else if constexpr (std::is_same_v<Value, bool>) {
    return value ? 1 : 0;
  } else if constexpr (std::is_same_v<Value, float>) {
    return std::bit_cast<std::uint32_t>(value);
  } else if constexpr (std::is_enum_v<Value>) {
    return static_cast<std::uint64_t>(value);
  } else {
    return value;
  }
}

template <typename Args, auto Member>
void read_one(Args& args, std::uint64_t value) {
  if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(Member)>, NotInArgs>) {
    using Value = std::remove_cvref_t<decltype(args.*Member)>;
    args.*Member = from_value<Value>(value);
  }
}

template <typename Args, auto Member>
std::uint64_t write_one(const Args& args) {
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(Member)>, NotInArgs>) {
    return 0;
  } else {
    return to_value(args.*Member);
  }
}

}  // namespace arg_fields_detail

// ArgFields<MyArgs, &MyArgs::x, ..., kNotInArgs, ...>: Members in declaration order.
template <typename Args, auto... Members>
struct ArgFields {
  static constexpr std::size_t count = sizeof...(Members);
  static_assert(count <= kMaxArgs);
  static constexpr std::array<ArgFieldKind, count> kinds{arg_fields_detail::kind_of<Args, Members>()...};

  // The struct from a call's values (values.size() >= count; a declared op's call has one value
  // per argument). Defaults such as a zero stride meaning k are the op's to apply after.
  static Args read(OpArgValues values) {
    Args args{};
    std::size_t at = 0;
    (arg_fields_detail::read_one<Args, Members>(args, values[at++]), ...);
    return args;
  }

  // The values of a typed call in declaration order (0 where the struct holds nothing).
  static std::array<std::uint64_t, kMaxArgs> write(const Args& args) {
    std::array<std::uint64_t, kMaxArgs> values{};
    std::size_t at = 0;
    ((values[at++] = arg_fields_detail::write_one<Args, Members>(args)), ...);
    return values;
  }
};

// std::logic_error naming the op, the position and the argument unless the declaration has one
// argument per place of `kinds` (ArgFields::kinds) and each agrees: a pointer where a tensor is
// declared, a scalar or flag where a scalar is, a flag (bool, two-value enum) only where the
// scalar's range is [0, 1]. Called when the declaration is built; swapping two scalars of one kind
// (m and k) is not caught here but by the ops' tests against their references.
void require_arg_fields(const OpDeclaration& op, std::span<const ArgFieldKind> kinds);

// A zero scalar that means another size (a row stride of 0: the row length).
constexpr std::uint32_t zero_means(std::uint32_t value, std::uint32_t otherwise) {
  return value == 0 ? otherwise : value;
}

}  // namespace metrale::ops
