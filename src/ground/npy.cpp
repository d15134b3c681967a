// npy.cpp: a strict reader and a writer for the .npy format (versions 1.0, 2.0 and 3.0).
// The header is a Python dict literal; only the three keys NumPy writes are accepted, and
// the data must be exactly shape-product * item-size bytes.
#include "ground/npy.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

#include "metrale/error.hpp"

namespace metrale {

namespace {

constexpr std::array<unsigned char, 6> kMagic{0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::uint64_t kMaxDims = 8;
constexpr std::size_t kMaxHeaderBytes = 1 << 16;

[[noreturn]] void fail(std::string_view name, std::string_view what) {
  throw ArgumentError(fmt::format("{}: not a valid .npy file for metrale: {}", name, what));
}

// A cursor over the header dict text; every accessor checks bounds.
class HeaderText {
 public:
  HeaderText(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) {
      ++pos_;
    }
  }
  bool consume(char c) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, std::string_view where) {
    if (!consume(c)) {
      fail(name_, fmt::format("header: expected '{}' {}", c, where));
    }
  }
  std::string quoted() {
    skip_spaces();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      fail(name_, "header: expected a quoted string");
    }
    const char quote = text_[pos_++];
    const auto end = text_.find(quote, pos_);
    if (end == std::string_view::npos) {
      fail(name_, "header: unterminated string");
    }
    std::string out(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_spaces();
    for (const auto& [word, value] :
         {std::pair{std::string_view("False"), false}, std::pair{std::string_view("True"), true}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail(name_, "header: fortran_order must be True or False");
  }
  std::uint64_t integer() {
    skip_spaces();
    std::uint64_t value = 0;
    std::size_t digits = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
        fail(name_, "header: a dimension does not fit in 64 bits");
      }
      value = value * 10 + digit;
      ++pos_;
      ++digits;
    }
    if (digits == 0) {
      fail(name_, "header: expected a dimension");
    }
    return value;
  }
  [[nodiscard]] bool at_end() {
    skip_spaces();
    return pos_ >= text_.size();
  }

 private:
  std::string_view text_;
  std::string_view name_;
  std::size_t pos_ = 0;
};

NpyDtype parse_descr(const std::string& descr, std::string_view name) {
  if (descr == "|u1" || descr == "<u1") {
    return NpyDtype::kUint8;
  }
  if (descr == "<u2") {
    return NpyDtype::kUint16;
  }
  if (descr == "<f4") {
    return NpyDtype::kFloat32;
  }
  fail(name,
       fmt::format("dtype '{}' is not one of uint8 ('|u1'), little-endian uint16 ('<u2') or float32 ('<f4')", descr));
}

std::string_view descr_of(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kUint8:
      return "|u1";
    case NpyDtype::kUint16:
      return "<u2";
    case NpyDtype::kFloat32:
      return "<f4";
  }
  return "|u1";
}

}  // namespace

std::string_view to_string(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kUint8:
      return "uint8";
    case NpyDtype::kUint16:
      return "uint16";
    case NpyDtype::kFloat32:
      return "float32";
  }
  return "?";
}

std::size_t dtype_bytes(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kUint8:
      return 1;
    case NpyDtype::kUint16:
      return 2;
    case NpyDtype::kFloat32:
      return 4;
  }
  return 1;
}

std::uint64_t NpyArray::element_count() const {
  std::uint64_t count = 1;
  for (std::uint64_t dim : shape) {
    count *= dim;
  }
  return count;
}

NpyArray parse_npy(std::span<const std::byte> bytes, std::string_view name) {
  if (bytes.size() < kMagic.size() + 2 || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    fail(name, "missing the \\x93NUMPY magic");
  }
  const auto major = static_cast<unsigned>(bytes[6]);
  std::size_t header_len = 0;
  std::size_t offset = 0;
  if (major == 1) {
    if (bytes.size() < 10) {
      fail(name, "truncated before the header length");
    }
    header_len = static_cast<std::size_t>(bytes[8]) | (static_cast<std::size_t>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      fail(name, "truncated before the header length");
    }
    for (int i = 3; i >= 0; --i) {
      header_len = (header_len << 8) | static_cast<std::size_t>(bytes[8 + static_cast<std::size_t>(i)]);
    }
    offset = 12;
  } else {
    fail(name, fmt::format("format version {} is not 1, 2 or 3", major));
  }
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - offset) {
    fail(name, fmt::format("header length {} runs past the end of the file ({} bytes)", header_len, bytes.size()));
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + offset), header_len);
  HeaderText header(text, name);
  std::optional<NpyDtype> dtype;
  std::optional<bool> fortran;
  std::optional<std::vector<std::uint64_t>> shape;
  header.expect('{', "at the start of the header");
  while (!header.consume('}')) {
    const std::string key = header.quoted();
    header.expect(':', "after a header key");
    if (key == "descr" && !dtype) {
      dtype = parse_descr(header.quoted(), name);
    } else if (key == "fortran_order" && !fortran) {
      fortran = header.boolean();
    } else if (key == "shape" && !shape) {
      shape.emplace();
      header.expect('(', "to open the shape");
      while (!header.consume(')')) {
        if (shape->size() >= kMaxDims) {
          fail(name, fmt::format("more than {} dimensions", kMaxDims));
        }
        shape->push_back(header.integer());
        if (!header.consume(',')) {
          header.expect(')', "to close the shape");
          break;
        }
      }
    } else {
      fail(name, fmt::format("header key '{}' is unknown or repeated", key));
    }
    if (!header.consume(',')) {
      header.expect('}', "to close the header");
      break;
    }
  }
  if (!header.at_end()) {
    fail(name, "text after the header dict");
  }
  if (!dtype || !fortran || !shape) {
    fail(name, "header lacks one of 'descr', 'fortran_order', 'shape'");
  }
  if (*fortran) {
    fail(name, "fortran_order=True arrays are not accepted; save with numpy.ascontiguousarray");
  }
  NpyArray array;
  array.dtype = *dtype;
  array.shape = std::move(*shape);
  std::uint64_t expected = dtype_bytes(array.dtype);
  for (std::uint64_t dim : array.shape) {
    if (dim != 0 && expected > std::numeric_limits<std::uint64_t>::max() / dim) {
      fail(name, "the shape's byte size overflows 64 bits");
    }
    expected *= dim;
  }
  const std::size_t data_offset = offset + header_len;
  const std::uint64_t available = bytes.size() - data_offset;
  if (available != expected) {
    fail(name, fmt::format("data holds {} bytes but the shape and dtype need {}", available, expected));
  }
  array.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_offset), bytes.end());
  return array;
}

NpyArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ArgumentError(fmt::format("{}: cannot open for reading", path.string()));
  }
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(raw.size());
  std::memcpy(bytes.data(), raw.data(), raw.size());
  return parse_npy(bytes, path.string());
}

std::vector<std::byte> serialize_npy(const NpyArray& array) {
  std::string dims;
  for (std::uint64_t dim : array.shape) {
    dims += fmt::format("{}, ", dim);
  }
  if (array.shape.size() > 1) {
    dims.resize(dims.size() - 1);  // "(2, 3)" but "(5,)" for one dimension
    dims.back() = ')';
    dims.insert(dims.begin(), '(');
  } else {
    dims = array.shape.empty() ? "()" : fmt::format("({},)", array.shape[0]);
  }
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr_of(array.dtype), dims);
  // Version 1.0: the data starts at a multiple of 64 bytes; the header ends with '\n'.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<std::byte> out;
  out.reserve(10 + header.size() + array.data.size());
  for (unsigned char c : kMagic) {
    out.push_back(static_cast<std::byte>(c));
  }
  out.push_back(std::byte{1});
  out.push_back(std::byte{0});
  out.push_back(static_cast<std::byte>(header.size() & 0xff));
  out.push_back(static_cast<std::byte>((header.size() >> 8) & 0xff));
  for (char c : header) {
    out.push_back(static_cast<std::byte>(c));
  }
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

void write_npy(const std::filesystem::path& path, const NpyArray& array) {
  const auto bytes = serialize_npy(array);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw ArgumentError(fmt::format("{}: cannot open for writing", path.string()));
  }
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    throw ArgumentError(fmt::format("{}: write failed", path.string()));
  }
}

}  // namespace metrale
