// jit_bundle_signature_test.cpp: Ed25519 bundle signatures (jit/bundle_signature.hpp). A bundle
// signed by a key pair from write_bundle_key_pair is served under its public key; with a key
// configured an unsigned bundle, a tampered manifest (even one whose checksums were recomputed),
// an entry file other than the signed one, or another signer's key is refused naming the path and
// the rule; without a key the same bundles serve as they always did. Key files are checked too.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "jit/bundle.hpp"
#include "jit/bundle_signature.hpp"
#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;

namespace {

const EntryKey kFields{.kernel = "k",
                       .params_tag = "b256",
                       .arch = "compute_90",
                       .nvrtc_version = "",
                       .options = "-std=c++17 --fmad=false",
                       .source_digest = "abc123",
                       .name_expression = "ns::k<256>"};

// A random PTX-like text (PTX-only: no CUBIN header to fake), seeded.
std::string random_ptx(std::uint64_t seed) {
  std::string text = "// ptx\n.version 8.0\n";
  for (const float value : ref::random_floats(64, seed, 0.0F, 1.0e6F)) {
    text += std::to_string(static_cast<long>(value)) + "\n";
  }
  return text;
}

// Writes a one-entry bundle into dir, holding `ptx`.
void write_sample_bundle(const std::filesystem::path& dir, const std::string& ptx) {
  BundleImage image;
  image.entry.fields = kFields;
  image.entry.lowered_name = "_Z1kILi256EEvv";
  image.entry.built_by_nvrtc = "13-0+0badf00d";
  image.ptx = std::make_shared<const std::string>(ptx);
  write_bundle(dir, {image});
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

struct Signed {
  test::TempDir tmp;
  std::filesystem::path bundle = tmp.path() / "bundle";
  std::string ptx = random_ptx(0x5197);
  std::shared_ptr<const BundlePublicKey> signer, other;

  Signed() {
    write_bundle_key_pair((tmp.path() / "signer").string());
    write_bundle_key_pair((tmp.path() / "other").string());
    signer = BundleSet::public_key_from((tmp.path() / "signer.pub").string());
    other = BundleSet::public_key_from((tmp.path() / "other.pub").string());
    write_sample_bundle(bundle, ptx);
    sign_bundle(bundle, read_bundle_secret_key(tmp.path() / "signer.key"));
  }
};

}  // namespace

TEST_CASE("a signed bundle is served under its signer's public key and by content without a key",
          "[jit][bundle][trust]") {
  Signed fixture;
  const BundleSet checked({fixture.bundle}, fixture.signer);
  CHECK(checked.refusals().empty());
  const std::optional<CompiledEntry> found = checked.find(kFields);
  REQUIRE(found);
  CHECK(*found->ptx == fixture.ptx);
  const BundleSet unchecked({fixture.bundle});
  REQUIRE(unchecked.find(kFields));
  struct stat info {};
  REQUIRE(::stat((fixture.tmp.path() / "signer.key").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  CHECK_THROWS_WITH(write_bundle_key_pair((fixture.tmp.path() / "signer").string()), Catch::Contains("exists"));
}

TEST_CASE("with a public key an unsigned bundle is refused naming it and the rule", "[jit][bundle][trust]") {
  Signed fixture;
  std::filesystem::remove(fixture.bundle / kBundleSignatureName);
  const BundleSet checked({fixture.bundle}, fixture.signer);
  REQUIRE(checked.refusals().size() == 1);
  CHECK_THAT(checked.refusals()[0], Catch::Contains(fixture.bundle.string()) && Catch::Contains("is unsigned") &&
                                        Catch::Contains("signer.pub"));
  CHECK_FALSE(checked.find(kFields));
  CHECK(BundleSet({fixture.bundle}).find(kFields));  // without a key: as before
}

TEST_CASE("with a public key a tampered manifest or entry file is refused", "[jit][bundle][trust]") {
  Signed fixture;
  SECTION("a forged entry with its checksums recomputed: the manifest is not the signed one") {
    const std::string forged = random_ptx(0xF0F0);
    const std::string signature = read_text(fixture.bundle / kBundleSignatureName);
    write_sample_bundle(fixture.bundle, forged);  // what a forger's tool writes: every checksum holds
    write_text(fixture.bundle / kBundleSignatureName, signature);
    REQUIRE(BundleSet({fixture.bundle}).find(kFields));  // trusted by content, as before
    const BundleSet checked({fixture.bundle}, fixture.signer);
    REQUIRE(checked.refusals().size() == 1);
    CHECK_THAT(checked.refusals()[0], Catch::Contains("bundle.json is not the signed manifest"));
    CHECK_FALSE(checked.find(kFields));
  }
  SECTION("an entry file's bytes other than the signed ones") {
    const std::string manifest = read_text(fixture.bundle / kBundleManifestName);
    const BundleSignatureCheck good = check_bundle_signature(fixture.bundle, manifest, *fixture.signer);
    REQUIRE(good.status == BundleSignatureStatus::kGood);
    const BundleEntry entry = manifest_from_json(manifest, "bundle.json").entries.at(0);
    CompiledEntry loaded;
    REQUIRE(bundle_entry_problem(fixture.bundle, entry, &loaded).empty());
    CHECK(good.signature->entry_problem(entry, loaded).empty());
    std::string changed = fixture.ptx;
    changed[changed.size() / 2] = changed[changed.size() / 2] == 'x' ? 'y' : 'x';
    loaded.ptx = std::make_shared<const std::string>(changed);
    CHECK_THAT(good.signature->entry_problem(entry, loaded),
               Catch::Contains(entry.ptx_file) && Catch::Contains("not the signed one"));
  }
  SECTION("an edited signature file") {
    std::string signature = read_text(fixture.bundle / kBundleSignatureName);
    char& digit = signature[signature.find("manifest ") + 9];
    digit = digit == '0' ? '1' : '0';
    write_text(fixture.bundle / kBundleSignatureName, signature);
    const BundleSet checked({fixture.bundle}, fixture.signer);
    REQUIRE(checked.refusals().size() == 1);
    CHECK_THAT(checked.refusals()[0], Catch::Contains("does not hold under the public key"));
  }
}

TEST_CASE("a bundle signed by another key is refused", "[jit][bundle][trust]") {
  Signed fixture;
  const BundleSet checked({fixture.bundle}, fixture.other);
  REQUIRE(checked.refusals().size() == 1);
  CHECK_THAT(checked.refusals()[0], Catch::Contains((fixture.bundle / kBundleSignatureName).string()) &&
                                        Catch::Contains("does not hold under the public key") &&
                                        Catch::Contains("other.pub"));
  CHECK_FALSE(checked.find(kFields));
}

TEST_CASE("key files are refused when unreadable of the wrong form or a secret key is not private",
          "[jit][bundle][trust]") {
  Signed fixture;
  const std::filesystem::path secret = fixture.tmp.path() / "signer.key";
  REQUIRE(::chmod(secret.c_str(), 0640) == 0);
  CHECK_THROWS_MATCHES(
      read_bundle_secret_key(secret), ConfigError,
      Catch::Message(secret.string() + " has mode 0640: a secret key must be readable by its owner only (chmod 600)"));
  const std::filesystem::path garbage = fixture.tmp.path() / "garbage.pub";
  write_text(garbage, "metrale-jit ed25519 public key\nnot hex\n");
  CHECK_THROWS_WITH(read_bundle_public_key(garbage),
                    Catch::Contains(garbage.string()) && Catch::Contains("is not a public key file"));
  CHECK_THROWS_AS(read_bundle_public_key(fixture.tmp.path() / "missing.pub"), ConfigError);
  // The public key where a secret one belongs (and the other way round) is no key of that kind.
  CHECK_THROWS_AS(read_bundle_public_key(secret), ConfigError);
  // A runtime configured with a file that is no key fails to open, naming it.
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kNone);
  options.bundle_dirs = {fixture.bundle.string()};
  options.bundle_public_key = garbage.string();
  CHECK_THROWS_WITH(Runtime::open(options), Catch::Contains(garbage.string()));
}
