// Error checks for every CUDA, cuBLAS and NCCL call: on failure, print
// file:line, the call and the library's own error string, and exit non-zero
// (a calibration run with one failed measurement must not write a profile).
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace calibrate {

[[noreturn]] inline void die(const char* file, int line, const char* call, const char* what) {
  std::fprintf(stderr, "trainsim-calibrate: %s:%d: %s failed: %s\n", file, line, call, what);
  std::exit(1);
}

inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) die(file, line, call, cudaGetErrorString(e));
}

inline void check(cublasStatus_t e, const char* call, const char* file, int line) {
  if (e != CUBLAS_STATUS_SUCCESS) die(file, line, call, cublasGetStatusString(e));
}

}  // namespace calibrate

#define CAL_CHECK(call) ::calibrate::check((call), #call, __FILE__, __LINE__)
