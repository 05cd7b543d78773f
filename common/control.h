/* control.h - the attributes a mounted view answers on its top directory
 * for sbx run (fs/journal.c; root and the mounting user only):
 *
 *   setxattr M user.sbxfs.run "NS"   a run is open since NS (0: none is
 *                                    open); pre-images are recorded while
 *                                    one is
 *   getxattr M user.sbxfs.sync       returns "ok" once every journal
 *                                    event so far is in the store
 *   getxattr M user.sbxfs.home       the home whose store the view writes
 *                                    to
 *   getxattr M user.sbxfs.refresh    returns "ok" once the kernel holds
 *                                    nothing cached of the thread's files
 *                                    (names, attributes, pages); asked
 *                                    after an undo or a restore, which
 *                                    write files back where the host
 *                                    watch may not see them (through
 *                                    another name)
 */
#ifndef SBX_CONTROL_H
#define SBX_CONTROL_H

#define CONTROL_XATTR_RUN "user.sbxfs.run"
#define CONTROL_XATTR_SYNC "user.sbxfs.sync"
#define CONTROL_XATTR_HOME "user.sbxfs.home"
#define CONTROL_XATTR_REFRESH "user.sbxfs.refresh"

#endif
