// jit_source_set_test.cpp: source sets, the template directory override, include digests.
#include <catch2/catch.hpp>

#include "ground/embedded_files.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/source_set.hpp"
#include "support/jit_test_support.hpp"

using jit_test_support::ScopedEnv;
using metrale::SourceSet;

TEST_CASE("included_names finds quoted and angled includes in order", "[jit][source_set]") {
  // Blanks may stand before and after '#', as the preprocessor allows; a directive without a
  // name, or "#include" that does not start a line, is not an include.
  const auto names = metrale::included_names(
      "#include \"a.cuh\"\n#  include <b.h>\n#include\t\"c.cuh\"\n#include x\n  #\tinclude \"d.cuh\"\n"
      "// see #include \"not_me.cuh\"\n#includes \"no.cuh\"");
  REQUIRE(names == std::vector<std::string>{"a.cuh", "b.h", "c.cuh", "d.cuh"});
  REQUIRE(metrale::included_names("#include <cuda_bf16.h>\n#include \"unterminated\n") ==
          std::vector<std::string>{"cuda_bf16.h"});
}

TEST_CASE("a digest covers a source and what it includes, nothing else", "[jit][source_set]") {
  SourceSet sources;
  sources.add_source("main.cuh", "#include \"helper.cuh\"\nint main_value;\n");
  sources.add_source("helper.cuh", "int helper = 1;\n");
  sources.add_source("other.cuh", "int other = 1;\n");
  const auto before = sources.digest("main.cuh");
  REQUIRE(before.has_value());
  REQUIRE(before->size() == 32);
  REQUIRE_FALSE(sources.digest("missing.cuh").has_value());

  sources.add_source("other.cuh", "int other = 2;\n");
  REQUIRE(sources.digest("main.cuh") == before);

  sources.add_source("helper.cuh", "int helper = 2;\n");
  const auto after = sources.digest("main.cuh");
  REQUIRE(after != before);
  REQUIRE(sources.digest("helper.cuh") != sources.digest("other.cuh"));
}

TEST_CASE("a self-including source does not loop", "[jit][source_set]") {
  SourceSet sources;
  sources.add_source("loop.cuh", "#include \"loop.cuh\"\n");
  REQUIRE(sources.digest("loop.cuh").has_value());
}

TEST_CASE("embedded templates are used unless METRALE_TEMPLATE_DIR is set", "[jit][source_set]") {
  {
    ScopedEnv env("METRALE_TEMPLATE_DIR", std::nullopt);
    SourceSet sources;
    sources.add_embedded_templates();
    REQUIRE(sources.size() == metrale::embedded_templates().size());
    for (const auto& file : metrale::embedded_templates()) {
      REQUIRE(sources.find(file.name) != nullptr);
      REQUIRE(*sources.find(file.name) == file.text);
    }
  }
  {
    ScopedEnv env("METRALE_TEMPLATE_DIR", jit_test_support::data_dir());
    SourceSet sources;
    sources.add_embedded_templates();
    REQUIRE(sources.contains("jit_test_kernels.cuh"));
    REQUIRE(sources.contains("jit_test_math.cuh"));
  }
  {
    ScopedEnv env("METRALE_TEMPLATE_DIR", "/nonexistent/metrale-templates");
    SourceSet sources;
    REQUIRE_THROWS_WITH(sources.add_embedded_templates(),
                        Catch::Contains("METRALE_TEMPLATE_DIR") && Catch::Contains("/nonexistent/metrale-templates"));
  }
}
