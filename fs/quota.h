/* quota.h - the thread's disk quota (--quota-bytes, --quota-inodes): a
 * change through the view that would take the thread's own directories
 * (workspace, uploads, outputs, acp-workspace) past either limit fails
 * with EDQUOT, and the daemon logs why. Skills and --mount roots are not
 * the thread's and do not count.
 *
 * Usage is what the directories and the thread's kept files hold
 * on disk (st_blocks, a hard-linked file once, at any depth), scanned in
 * a thread of its own at mount; until that scan is done a change that
 * must be charged waits for it. Changes add what they may allocate (the
 * bytes a write adds beyond the end of the file or fills in its holes, a
 * fallocate's length, a stage's copy of the file, an extended attribute's
 * block, a new entry), and a kept file that is a copy adds what it took
 * (quota_took()); an unlink or rmdir gives back what it frees (not one
 * that keeps the file as a pre-image), and other changes that may free
 * space (a truncation, a published stage) say so. When a charge would
 * cross a limit, the directories are scanned again if space was freed
 * since the last scan or it is older than a second, and the charge is
 * decided on the fresh figure. So a refusal is never based on space that
 * was freed, and usage can run ahead of the disk by at most what was
 * charged since the last scan. Host-side edits count from the next
 * scan.
 *
 * Thread-safe.
 */
#ifndef SBX_QUOTA_H
#define SBX_QUOTA_H

#include <stddef.h>
#include <stdint.h>

struct quota;

/* A quota of MAX_BYTES and MAX_INODES (0: no limit on that one) over the
 * directories ROOTS (NROOTS O_PATH fds, duplicated). NULL if both are 0,
 * or for lack of memory (logged). */
struct quota *quota_new(uint64_t max_bytes, uint64_t max_inodes, const int *roots, size_t nroots);
/* Starts the first scan. */
void quota_start(struct quota *q);
void quota_free(struct quota *q);

/* Charges BYTES and INODES. Returns 0, or -EDQUOT with the limit that
 * would be crossed in WHY ("the thread's 64 MiB"). Q may be NULL. */
int quota_charge(struct quota *q, uint64_t bytes, uint64_t inodes, char *why, size_t whylen);

/* BYTES were taken without a charge (a kept copy, which is made whatever
 * the limit; the next charge sees it). Q may be NULL. */
void quota_took(struct quota *q, uint64_t bytes);

/* BYTES and INODES were freed (0, 0: some space may have been). Q may be
 * NULL. */
void quota_release(struct quota *q, uint64_t bytes, uint64_t inodes);

#endif
