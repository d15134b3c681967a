// tests/support/target_test_support.hpp: the target tests' helpers: an environment variable set for one test
// and restored after it, and a temporary directory removed after it (tests/support).
#pragma once

#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
