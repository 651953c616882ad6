/* MPIX_Query_cuda_support() under gdrpipe: Open MPI 4.1's libmpi answers a
 * compile-time 0. The interposer (libgdrpipe_ompi.so, preloaded by
 * gdrpipe-run) defines it in front of libmpi's and answers 1 once the
 * collective component has taken part, i.e. where device buffers work. */
#ifndef GDRPIPE_OMPI_MPIX_H
#define GDRPIPE_OMPI_MPIX_H

#define GPO_MPIX_SET_SYMBOL "gdrpipe_ompi_set_cuda_support"

/* the component's side: tells the interposer, if it is loaded */
void gpo_mpix_set_supported(int yes);

#endif
