/* launcher_proto.h - the protocol between the broker and sbx-launcher
 * (launcher_main.c), on a SOCK_SEQPACKET socket pair, one message at a
 * time:
 *
 *   launcher -> broker  LAUNCHER_READY            set up, or done with the
 *                                                 last command: the next
 *                                                 may come
 *   broker -> launcher  LAUNCHER_RUN + 3 fds      the request (a memfd:
 *                                                 cwd, shell, command,
 *                                                 then each "K=V" of the
 *                                                 environment, each
 *                                                 NUL-terminated), and
 *                                                 the command's stdout
 *                                                 and stderr
 *   launcher -> broker  LAUNCHER_STATUS + int32   its wait status, once
 *                                                 every process of it is
 *                                                 gone
 *
 * The broker closes its end to end the launcher. It trusts nothing it
 * reads but a well-formed status: a launcher that says anything else,
 * or goes silent past its deadline, is killed with its sandbox.
 */
#ifndef SBX_LAUNCHER_PROTO_H
#define SBX_LAUNCHER_PROTO_H

#define LAUNCHER_READY 'R'
#define LAUNCHER_RUN 'X'
#define LAUNCHER_STATUS 'S'

/* Where bubblewrap's command finds the program (an executable's
 * descriptor: /proc/self/fd/LAUNCHER_PROGRAM_FD) and its socket. */
#define LAUNCHER_PROGRAM_FD 8
#define LAUNCHER_CONTROL_FD 9

/* What it writes to a command's stderr when it cannot start it, as
 * launch.h's LAUNCH_FAILED. */
#define LAUNCHER_FAILED "sbx: cannot start the command: "

#endif
