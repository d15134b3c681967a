// The .npy reader and writer: round trips, NumPy's own header spelling, and every defect a
// hostile or damaged file can carry rejected with a message naming it.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>

#include "ground/npy.hpp"
#include "metrale/error.hpp"

using metrale::NpyArray;
using metrale::NpyDtype;

namespace {

std::vector<std::byte> bytes_of(const std::string& text) {
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

// A version 1.0 file around a given header text and data size.
std::vector<std::byte> npy_file(const std::string& header, std::size_t data_bytes) {
  std::string text = std::string("\x93NUMPY\x01\x00", 8);
  text.push_back(static_cast<char>(header.size() & 0xff));
  text.push_back(static_cast<char>(header.size() >> 8));
  text += header;
  text.append(data_bytes, '\x5a');
  return bytes_of(text);
}

}  // namespace

TEST_CASE("npy round trip keeps dtype, shape and bytes") {
  std::mt19937 rng(7);
  for (NpyDtype dtype : {NpyDtype::kUint8, NpyDtype::kUint16, NpyDtype::kFloat32}) {
    NpyArray array;
    array.dtype = dtype;
    array.shape = {3, 5};
    array.data.resize(15 * metrale::dtype_bytes(dtype));
    for (auto& b : array.data) {
      b = static_cast<std::byte>(rng() & 0xff);
    }
    const auto bytes = metrale::serialize_npy(array);
    const NpyArray back = metrale::parse_npy(bytes, "roundtrip.npy");
    CHECK(back.dtype == dtype);
    CHECK(back.shape == array.shape);
    CHECK(back.data == array.data);
  }
}

TEST_CASE("npy reads NumPy's own header spelling") {
  // What numpy.save writes for np.arange(6, dtype='<u2').reshape(2, 3).
  std::string header = "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(118 - header.size() - 1, ' ');
  header.push_back('\n');
  const NpyArray array = metrale::parse_npy(npy_file(header, 12), "numpy.npy");
  CHECK(array.dtype == NpyDtype::kUint16);
  CHECK(array.shape == std::vector<std::uint64_t>{2, 3});
  CHECK(array.element_count() == 6);
  const NpyArray one =
      metrale::parse_npy(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", 16), "one.npy");
  CHECK(one.shape == std::vector<std::uint64_t>{4});
}

TEST_CASE("npy defects are refused with the file name and the defect") {
  const std::string good_shape = "'shape': (2, 3), }";
  struct Case {
    const char* what;
    std::vector<std::byte> bytes;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"no magic", bytes_of("NUMPY...."), "magic"},
      {"bad version", bytes_of(std::string("\x93NUMPY\x07\x00\x10\x00", 10)), "version"},
      {"header past end", bytes_of(std::string("\x93NUMPY\x01\x00\xff\x00{", 11)), "runs past"},
      {"big endian", npy_file("{'descr': '>u2', 'fortran_order': False, " + good_shape, 12), "dtype"},
      {"float64", npy_file("{'descr': '<f8', 'fortran_order': False, " + good_shape, 48), "dtype"},
      {"fortran", npy_file("{'descr': '<u2', 'fortran_order': True, " + good_shape, 12), "fortran_order"},
      {"short data", npy_file("{'descr': '<u2', 'fortran_order': False, " + good_shape, 11), "need 12"},
      {"long data", npy_file("{'descr': '<u2', 'fortran_order': False, " + good_shape, 13), "need 12"},
      {"unknown key", npy_file("{'descr': '<u2', 'order': False, " + good_shape, 12), "unknown"},
      {"repeated key", npy_file("{'descr': '<u2', 'descr': '<u2', " + good_shape, 12), "repeated"},
      {"missing key", npy_file("{'descr': '<u2', " + good_shape, 12), "lacks"},
      {"huge shape", npy_file("{'descr': '<u2', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", 0),
       "overflows"},
      {"dimension overflow",
       npy_file("{'descr': '<u2', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 0), "64 bits"},
      {"unterminated", npy_file("{'descr': '<u2", 0), "unterminated"},
      {"trailing text", npy_file("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), } x", 2), "after the header"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    try {
      (void)metrale::parse_npy(c.bytes, "bad.npy");
      FAIL("accepted a defective file");
    } catch (const metrale::ArgumentError& e) {
      const std::string message = e.what();
      CHECK(message.find("bad.npy") != std::string::npos);
      CHECK(message.find(c.needle) != std::string::npos);
    }
  }
}
