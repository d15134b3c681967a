// runtime/kernel_verification.hpp: one kernel's verification on the runtime's own device: the
// check hooks (OpDeclaration::check) of every op role it serves, run at their small random shapes
// on an isolated stream (GpuBackend::isolate), cut off at a time limit, folded into one verdict.
// Invariants: every way a check can end is a verdict, never an exception: rows that all passed
// (passed), a row that failed, a check that threw (a fault; a sticky context error is named as
// such), one that crashed or one past its time limit ("check exceeded N ms") (failed: refused); no
// row at all, or only skipped rows, is skipped (nothing could check it: published, and said so).
// On the host backend the checks run in a child process (check_in_child.hpp): one past its limit
// is killed, one that faults (SIGSEGV, SIGBUS) ends only the child, and nothing is left running.
// On a GPU they run on a thread of their own; one past its limit keeps running there, the caller
// keeps its Straggler and must outlive it (the runtime waits for it in its destructor, after the
// registry's background builds).
#pragma once

#include <chrono>
#include <future>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/ops/op_declaration.hpp"
#include "metrale/runtime.hpp"

namespace metrale {

// One op role whose check covers the kernel: the op's context with the kernel's handle in place
// (and every other role as the runtime holds it), and the role to check.
struct CheckUse {
  ops::OpContext context;
  std::string role;
};

// A check still running past its time limit; waited for before the device goes away.
using Straggler = std::future<void>;

// The verdict of `rows` (CheckResults of one kernel). Pure: passed when every row ran and passed,
// failed at the first failed row, skipped when none ran.
KernelVerdict verdict_from_rows(std::span<const ops::CheckResult> rows);

// Where a check ran, as a refusal names it: "NVIDIA H200, driver 580.159.04" on a device that
// needs compiled images, the backend's describe() otherwise ("host (2 worker threads)").
std::string device_text(const GpuBackend& gpu);

// "failed its check on <where>: <what>". Pure.
std::string refusal_text(std::string_view where, std::string_view what);

// Runs every use's check (role `use.role`) on one thread of its own, isolated from other
// threads' streams and captures, within `limit`; `stragglers` receives a check still running.
// A failed verdict's refusal names `device_text(gpu)`.
KernelVerdict verify_kernel(GpuBackend& gpu, std::span<const CheckUse> uses, std::chrono::milliseconds limit,
                            std::vector<Straggler>& stragglers);

}  // namespace metrale
