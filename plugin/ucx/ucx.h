/* The one UCX header of the plugin: UCX's installed (public) headers, and
 * what the plugin uses of UCX's internals, declared here because no UCX
 * package installs it.
 *
 *   base.h   internal types and functions whose form is the same in every
 *            supported UCX (the base interface and endpoint classes, the
 *            memory domain, the transport entry, UCM's event installer)
 *   util.h   the plugin's own versions of UCX's internal inline helpers
 *            (allocation, queues, iovecs, parameter checks)
 *   abi.h    the version-neutral face of what differs between UCX versions
 *            (component, memory-domain operations, md attributes, internal
 *            interface operations, performance estimates, memory pools,
 *            UCP's endpoint configuration)
 *   v1_*.h, v1_*.c  one ABI version each: its layouts and the adapters
 *            behind abi.h. Only plugin/ucx/ knows versions; meson builds
 *            the one that matches the UCX the plugin is built for. */
#ifndef GDRPIPE_UCX_H
#define GDRPIPE_UCX_H

#include <uct/api/uct.h>
#include <uct/api/tl.h>
#include <uct/api/version.h>
#include <ucp/api/ucp.h>
#include <ucm/api/ucm.h>
#include <ucs/config/parser.h>
#include <ucs/config/global_opts.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue_types.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/debug/log_def.h>
#include <ucs/memory/memtype_cache.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>

#include "base.h"
#include "util.h"
#include "abi.h"

#endif
