/* viewreg.h - the mounted views of a home, as the commands that tell
 * them things find them (sbx run: the control attributes, control.h).
 *
 *   $SBX_HOME/run/mounted/USER/THREAD/PID    "MAJOR:MINOR MOUNTPOINT\n"
 *
 * A view's daemon adds its entry once mounted (PID its own, MAJOR:MINOR
 * its mount's device, MOUNTPOINT as the mount table spells it) and
 * removes it at exit. Finding the views reads the entries and the mount
 * table only, never a view: a view whose daemon is stopped cannot hold
 * the caller up, and views of other homes are never seen. An entry whose
 * process is gone (a daemon killed) is removed by whoever finds it; one
 * whose mount the caller's table does not show at that path with that
 * device (another namespace's, or a path mounted again since) is
 * skipped.
 */
#ifndef SBX_VIEWREG_H
#define SBX_VIEWREG_H

/* Adds this process's entry for its view of USER's THREAD mounted at
 * MOUNTPOINT (absolute, no symlinks) in the home HOMEFD. Returns 0 or
 * -errno. */
int viewreg_add(int homefd, const char *user, const char *thread, const char *mountpoint);
/* Removes it. */
void viewreg_remove(int homefd, const char *user, const char *thread);

/* Calls FN with the mount point of each mounted view of USER's THREAD in
 * the home HOMEFD; returns how many there are (0 if none or the home
 * has no such entries). */
int viewreg_each(int homefd, const char *user, const char *thread,
		 void (*fn)(const char *mountpoint, void *arg), void *arg);

#endif
