// tests/data/corpus/corpus_cases_constructs.hpp: the runs and references of the corpus cases for
// constructs the host backend once got wrong or refused (arch_guarded.cu: a body under
// `#if __CUDA_ARCH__ >= 700`; shared_templates.cu: `extern __shared__` reached from function
// templates; partly_host.cu: the one kernel of its file that needs nothing the host lacks), for the table in
// corpus_cases.hpp, which includes this inside namespace corpus, after its helpers.
#pragma once

// out[i] = in[i] * scale + offset over a ragged tail, from NaN (so a body compiled away, or a
// launch that never ran, leaves it and differs); the kernel takes `in, out, n, scale` and, when
// `offset_argument`, the offset after them (else it adds the offset itself).
inline CaseResult run_scale_offset(CaseRun& run, std::string_view kernel, std::size_t n, std::uint32_t seed,
                                   std::uint32_t threads, float scale, float offset, bool offset_argument) {
  const std::vector<float> x = random_floats(n, seed, -4.0F, 4.0F);
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr out = run.upload(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
  run.timed([&] {
    metrale::KernelLaunch launch = run.launch(kernel);
    launch.grid({blocks_for(n, threads), 1, 1})
        .block({threads, 1, 1})
        .arg_ptr(in)
        .arg_ptr(out)
        .arg_u32(static_cast<std::uint32_t>(n))
        .arg_f32(scale);
    if (offset_argument) {
      launch.arg_f32(offset);
    }
    launch.launch();
  });
  std::vector<float> want(n);
  std::transform(x.begin(), x.end(), want.begin(), [&](float v) { return v * scale + offset; });
  return {n, first_difference(run.download<float>(out, n), want, kernel)};
}

// guarded_scale: out[i] = in[i] * k + 1, its body under `#if __CUDA_ARCH__ >= 700`.
inline CaseResult run_guarded_scale(CaseRun& run, std::size_t n, std::uint32_t seed) {
  return run_scale_offset(run, "corpus_arch_guarded_scale", n, seed, 128, -2.5F, 1.0F, false);
}

// partly_host.cu's affine: out[i] = in[i] * k + bias; its file's other kernels (inline PTX,
// __dp4a) must not take it down on the host backend. A power-of-two scale keeps the product
// exact, so a GPU's FMA rounds alike.
inline CaseResult run_partly_host_affine(CaseRun& run, std::size_t n, std::uint32_t seed) {
  return run_scale_offset(run, "corpus_partly_host_affine", n, seed, 96, 4.0F, -0.5F, true);
}

// The shared_templates.cu kernels: each block of 128 reverses its values through dynamic shared
// memory (reverse_scaled<3> also multiplies by 3).
template <typename T>
CaseResult run_shared_reverse(CaseRun& run, std::string_view kernel, std::size_t n, std::uint32_t seed, T scale) {
  constexpr std::uint32_t kThreads = 128;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  std::vector<T> x(n);
  const std::vector<int> ints = random_ints<int>(n, seed, -1000000, 1000000);
  std::transform(ints.begin(), ints.end(), x.begin(),
                 [](int v) { return std::is_integral_v<T> ? static_cast<T>(v) : static_cast<T>(v) / T(7); });
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr out = run.upload(std::vector<T>(n, static_cast<T>(-77)));
  run.timed([&] {
    run.launch(kernel)
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .dynamic_shared(static_cast<std::uint32_t>(kThreads * sizeof(T)))
        .arg_ptr(in)
        .arg_ptr(out)
        .launch();
  });
  std::vector<T> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t block = i / kThreads;
    want[i] = x[block * kThreads + kThreads - 1 - i % kThreads] * scale;
  }
  return {n, first_difference(run.download<T>(out, n), want, "reversed value")};
}
