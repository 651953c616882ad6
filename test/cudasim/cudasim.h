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

/* The virtual clock (GDRPIPE_SIM_CLOCK=virtual): every copy completes at
 * once, and time is the modeled time of the work the process has waited for
 * (synchronize, or a query that found it done). Returns 1 and stores the
 * process's virtual now in seconds in *now_s (if not NULL); returns 0, and
 * stores nothing, when the clock is real or before cuInit. */
int gdrpipe_sim_virtual_clock(double *now_s);

/* How many times cuFlushGPUDirectRDMAWrites succeeded in this process. */
unsigned long gdrpipe_sim_rdma_flushes(void);

/* What the simulator holds for this process right now: leak checks compare
 * these before and after a client's cleanup. */
struct gdrpipe_sim_counts {
  long device_allocs;  /* cuMemAlloc / managed / VMM mappings / pool blocks */
  long host_allocs;    /* cuMemHostAlloc + cuMemHostRegister */
  long ipc_imports;    /* open IPC / pool imports (counted once each) */
  long streams;        /* user-created streams (legacy ones not counted) */
  long events;
  long phys;           /* cuMemCreate handles */
  long user_pools;     /* cuMemPoolCreate / imported pools (defaults not) */
  long primary_refs;   /* retained primary contexts, summed over devices */
};
/* Fills *out (all zero before cuInit). Returns 0, or -1 if out is NULL. */
int gdrpipe_sim_get_counts(struct gdrpipe_sim_counts *out);

#ifdef __cplusplus
}
#endif
#endif
