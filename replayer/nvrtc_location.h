#pragma once
// Where the replayer finds NVRTC, which Slang runs to turn CUDA source into
// PTX. The NVRTC build is part of the toolchain: its version is written into
// every PTX file, so a replay only matches a recording made with the same one.

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "slang.h"

namespace spreplay {

// Where NVRTC is: lib64 (a toolkit) or lib (NVIDIA's PyPI wheels) of
// $CUDA_HOME, else of /usr/local/cuda.
std::optional<std::string> DefaultNvrtcDirectory();

// Makes `session` compile CUDA with the NVRTC in `directory`: its builtins
// preloaded, then its path set (with a loader that opens libnvrtc.so.<major>
// where the directory has no libnvrtc.so, as NVIDIA's wheels have not). NVRTC dlopens its builtins
// by file name, so a toolkit off the loader's search path (CUDA from PyPI in a virtualenv) would
// fail with "failed to open libnvrtc-builtins.so.13.0" without the preload, which lasts for the
// life of the process.
absl::Status UseNvrtc(slang::IGlobalSession* session, const std::string& directory);

// Slang looks for cuda_fp16.h (kernels that use half) beside NVRTC's library,
// then in $CUDA_PATH/include. A toolkit's layout puts it where Slang looks;
// NVIDIA's PyPI wheels put it in ../include of the library, where Slang does
// not. With CUDA_PATH unset and the header there, sets CUDA_PATH to that
// include directory's parent. Changes the environment: call it before the
// process starts threads. Returns the CUDA_PATH now in force ("" for none).
std::string PointSlangAtCudaHeaders(const std::string& nvrtc_directory);

// NVRTC 13, on a machine with a CUDA driver, looks each compile's output up in
// the driver's compute cache ($CUDA_CACHE_PATH, else ~/.nv/ComputeCache) and
// adds it there on a miss. The app's entries never match a replay's, and the
// app, served from the archive, asks for none of them, so a replay's entries
// would serve only a later compile of the same kernels, which the compile
// cache serves first, while they push the user's own out of the cache. Sets
// CUDA_CACHE_DISABLE=1 unless the user set it (to 0, say). Changes the
// environment: call it before the process starts threads.
void KeepNvrtcOutOfComputeCache();

}  // namespace spreplay
