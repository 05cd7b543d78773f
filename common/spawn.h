/* spawn.h - running the project's other programs (sbxfs, fusermount3).
 * The mount table and unmounting are mounts.h's. */
#ifndef SBX_SPAWN_H
#define SBX_SPAWN_H

#include <stddef.h>

/* The environment variable by which sbx mount tells sbxfs its name
 * ("sbx mount") for help and errors; sbxfs does not pass it on. */
#define SBXFS_NAME_ENV "SBXFS_NAME"

/* Runs ARGV (NULL-terminated; ARGV[0] looked up on PATH) and waits.
 * Returns its exit status (128 + N if killed by signal N), or -errno if
 * it could not be started. */
int spawn_wait(const char *const argv[]);

/* spawn_wait(), with what ARGV writes on stderr caught: it is passed on
 * to our stderr (a log, where the program's own lines belong) once ARGV
 * has ended, and its last line (without a "NAME: " prefix) goes in WHY
 * for the caller's message, or "" if it wrote none. */
int spawn_wait_why(const char *const argv[], char *why, size_t size);

/* The path of program NAME next to the running one (bin/ in the tree,
 * PREFIX/bin when installed), or NAME itself (PATH) if there is none. */
void sibling_program(const char *name, char *buf, size_t size);

#endif
