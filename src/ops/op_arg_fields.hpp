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
#include "ops/op_checks.hpp"

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

// Whether two places of a list name the same member (kNotInArgs names none).
template <auto First, auto Second>
constexpr bool same_member() {
  using FirstType = std::remove_cvref_t<decltype(First)>;
  if constexpr (std::is_same_v<FirstType, std::remove_cvref_t<decltype(Second)>> &&
                !std::is_same_v<FirstType, NotInArgs>) {
    return First == Second;
  } else {
    return false;
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

  // The place of `Member` in the list; `count` when it is not there (ZeroMeansList refuses that
  // at compile time).
  template <auto Member>
  static constexpr std::size_t place_of() {
    constexpr std::array<bool, count> same{arg_fields_detail::same_member<Member, Members>()...};
    for (std::size_t at = 0; at < count; ++at) {
      if (same[at]) {
        return at;
      }
    }
    return count;
  }

  // The struct from a call's values (values.size() >= count; a declared op's call has one value
  // per argument). A zero that stands for another size is the op's ZeroMeansList to apply after.
  static Args read(OpArgValues values) {
    Args args{};
    std::size_t at = 0;
    (arg_fields_detail::read_one<Args, Members>(args, values[at++]), ...);
    return args;
  }

  // The values of a typed call in declaration order (0 where the struct holds nothing), in an
  // array of `Slots` (a call's kMaxArgs, or the list's own length where nothing else is read).
  template <std::size_t Slots = kMaxArgs>
  static std::array<std::uint64_t, Slots> write(const Args& args) {
    static_assert(Slots >= count);
    std::array<std::uint64_t, Slots> values{};
    std::size_t at = 0;
    ((values[at++] = arg_fields_detail::write_one<Args, Members>(args)), ...);
    return values;
  }

  // A typed call's tensors held to the declaration of the library op `op` whose list this is
  // (detail::DeclaredTensors: null, optional, alignment), so the declaration is the one place an
  // op states its tensors' names and alignments. The rules are read from library_ops()'s
  // declaration at the first call and kept (one list per op, so one per instantiation).
  static void require_library_tensors(std::string_view op, const Args& args) {
    static const detail::DeclaredTensors tensors(library_ops().get(op).args);
    tensors.require(op, write<count>(args));  // the list's own length: a call pays for no more
  }
};

// A zero in the scalar member `Scalar` stands for the member `Size` over `Divisor` (a row stride of
// 0: the row's length): ZeroMeans<&A::k_stride, &A::k>, ZeroMeans<&A::nv, &A::n, 2>. The
// declaration says the same as the argument's zero_means ("k", "n/2"), which the extent and
// aliasing checks read; require_arg_fields compares the two when the declaration is built.
template <auto Scalar, auto Size, std::uint32_t Divisor = 1>
struct ZeroMeans {
  static_assert(Divisor != 0, "a zero cannot stand for a size over 0");
  static constexpr auto scalar = Scalar;
  static constexpr auto size = Size;
  static constexpr std::uint32_t divisor = Divisor;

  template <typename Args>
  static void apply(Args& args) {
    if (args.*Scalar == 0) {
      args.*Scalar = args.*Size / Divisor;
    }
  }
};

// A ZeroMeans rule by places of the argument list, as require_arg_fields compares it.
struct ZeroMeansPlaces {
  std::size_t scalar = 0;
  std::size_t size = 0;
  std::uint32_t divisor = 1;
};

// An op's ZeroMeans rules over its argument list `Fields`, applied in list order after
// Fields::read.
template <typename Fields, typename... Rules>
struct ZeroMeansList {
  static constexpr std::array<ZeroMeansPlaces, sizeof...(Rules)> places{ZeroMeansPlaces{
      Fields::template place_of<Rules::scalar>(), Fields::template place_of<Rules::size>(), Rules::divisor}...};
  static constexpr bool in_list() {
    for (const ZeroMeansPlaces& rule : places) {
      if (rule.scalar >= Fields::count || rule.size >= Fields::count) {
        return false;
      }
    }
    return true;
  }
  static_assert(in_list(), "a ZeroMeans member is not in the argument list");

  template <typename Args>
  static void apply(Args& args) {
    (Rules::apply(args), ...);
  }
};

// std::logic_error naming the op, the position and the argument unless the declaration has one
// argument per place of `kinds` (ArgFields::kinds) and each agrees: a pointer where a tensor is
// declared, a scalar or flag where a scalar is, a flag (bool, two-value enum) only where the
// scalar's range is [0, 1]; and unless each argument's zero_means is what the call's rules
// (ZeroMeansList::places) read a 0 there as, the same size over the same divisor, or nothing
// on both sides. Called when the declaration is built; swapping two scalars of one kind (m and k)
// is not caught here but by the ops' tests against their references.
void require_arg_fields(const OpDeclaration& op, std::span<const ArgFieldKind> kinds,
                        std::span<const ZeroMeansPlaces> zero_means = {});

}  // namespace metrale::ops
