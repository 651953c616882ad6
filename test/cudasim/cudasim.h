/* Test hooks of the CUDA-driver simulator (libcuda.so.1 from test/cudasim).
 * Not part of the CUDA API: resolve with dlsym() when the simulator may not
 * be the loaded driver. */
#ifndef GDRPIPE_CUDASIM_H
#define GDRPIPE_CUDASIM_H
#ifdef __cplusplus
extern "C" {
#endif

/* Replaces the timing model (same grammar as GDRPIPE_SIM_TOPO, applied on
 * top of the "fast" preset); requires cuInit. Returns 0, or -1 on a parse
 * error (the model is left unchanged). */
int gdrpipe_sim_set_topology(const char *spec);

/* How many times cuFlushGPUDirectRDMAWrites succeeded in this process. */
unsigned long gdrpipe_sim_rdma_flushes(void);

#ifdef __cplusplus
}
#endif
#endif
