// tests/support/edited_templates.hpp: a template folder with one planted mistake: the embedded
// templates written out with the FP8 twin's call edited (`pow2_scale != 0u` becomes `== 0u` in
// its last occurrence, the twin's; the shared kernel's comes first), so the twin writes
// power-of-two scales where fp32 ones are asked for and the reverse. The host JIT compiles it
// (its digest differs from the embedded one); the parent in the same file is unchanged in effect.
// Also any one edit (write_templates_editing), and the SiLU-and-mul h moved by some ulps in both
// of its kernels (write_silu_h_off_by: what a device whose expf differs from the C library's does).
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "ground/embedded_files.hpp"
#include "metrale/environment.hpp"
#include "ops/op_kernels.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"

namespace metrale::test {

inline void write_edited_templates(const std::filesystem::path& dir) {
  bool edited = false;
  for (const EmbeddedFile& file : embedded_templates()) {
    std::string text(file.text);
    if (file.name == ops::kFp8QuantTemplateFile) {
      const std::string from = "scale_stride_g, pow2_scale != 0u);";
      const std::size_t at = text.rfind(from);
      REQUIRE(at != std::string::npos);  // the anchor moved: update this helper with the template
      REQUIRE(text.find(from) != at);    // and the shared kernel's call is another one
      text.replace(at, from.size(), "scale_stride_g, pow2_scale == 0u);");
      edited = true;
    }
    const std::filesystem::path path = dir / std::string(file.name);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  REQUIRE(edited);
}

// The embedded templates in `dir` with one edit: `anchor`, found exactly once in `file`, becomes
// `replacement`.
inline void write_templates_editing(const std::filesystem::path& dir, std::string_view file, const std::string& anchor,
                                    const std::string& replacement) {
  bool edited = false;
  for (const EmbeddedFile& embedded : embedded_templates()) {
    std::string text(embedded.text);
    if (embedded.name == file) {
      const std::size_t at = text.find(anchor);
      REQUIRE(at != std::string::npos);                         // the anchor moved: update the test
      REQUIRE(text.find(anchor, at + 1) == std::string::npos);  // and it names one place
      text.replace(at, anchor.size(), replacement);
      edited = true;
    }
    const std::filesystem::path path = dir / std::string(embedded.name);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  REQUIRE(edited);
}

// The SiLU-and-mul op's h `ulps` bf16 steps off wherever g > 1 (about 3 elements in 8) in both its
// kernels: the one function both call to compute h gets `ulps` added to its bits.
inline void write_silu_h_off_by(const std::filesystem::path& dir, unsigned ulps) {
  const std::string anchor = "return bf16_bits_from_float(__fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u));";
  std::string planted = anchor;
  planted.insert(planted.size() - 1, " + (g > 1.0f ? " + std::to_string(ulps) + "u : 0u)");
  write_templates_editing(dir, ops::kSiluMulTemplateFile, anchor, planted);
}

// An environment naming only METRALE_TEMPLATE_DIR (when `dir` is given) and `extra` = `value`.
inline EnvLookup template_dir_env(const std::optional<std::filesystem::path>& dir, std::string extra = {},
                                  std::string value = {}) {
  return [dir, extra, value](const char* name) -> std::optional<std::string> {
    if (dir && std::string_view(name) == "METRALE_TEMPLATE_DIR") {
      return dir->string();
    }
    if (!extra.empty() && extra == name) {
      return value;
    }
    return std::nullopt;  // the host JIT's PATH falls back to /usr/local/bin:/usr/bin:/bin
  };
}

}  // namespace metrale::test
