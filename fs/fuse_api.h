/* fuse_api.h - the libfuse low-level API, at the version the view is
 * written to. Every fs/ file that names a FUSE type includes this, not
 * <fuse_lowlevel.h> itself, so that one version is seen everywhere.
 */
#ifndef SBX_FUSE_API_H
#define SBX_FUSE_API_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#endif
