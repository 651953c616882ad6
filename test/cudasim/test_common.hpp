// Shared helpers of the simulator tests (linked directly against libcuda.so.1
// from test/cudasim).
#pragma once
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gp_catch.hpp"
#include <chrono>
#include <cstdio>
#include <functional>

#include "cudasim.h"

#define CU_OK(call) REQUIRE((call) == CUDA_SUCCESS)

// cuInit + primary context of `dev` current on this thread; restores the
// default ("fast") timing model.
inline CUcontext sim_setup(int dev = 0) {
  CU_OK(cuInit(0));
  CUcontext ctx;
  CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_OK(cuCtxSetCurrent(ctx));
  REQUIRE(gdrpipe_sim_set_topology("fast") == 0);
  return ctx;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `body` in a forked child; returns its wait status. The child never
// returns into Catch: it _exit()s with body's result (0 = pass).
inline int run_in_child(const std::function<int()>& body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

inline bool child_passed(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// In a child: cuInit + context; returns false on failure.
inline bool child_setup(int dev = 0) {
  CUcontext ctx;
  return cuInit(0) == CUDA_SUCCESS && cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
         cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
}
