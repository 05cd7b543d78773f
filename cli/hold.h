/* hold.h - the home's broker, held by a command that serves through it
 * for as long as it runs (sbx mcp, sbx serve). */
#ifndef SBX_CLI_HOLD_H
#define SBX_CLI_HOLD_H

struct client_conn;

/* A broker such a command starts stops this long after its last client
 * left. */
#define HOLD_BROKER_IDLE_S 3

/* Connects to the broker that serves HOME, or to one started for it
 * (client_hold_broker()), and says which on stderr as COMMAND. Returns
 * 0 and *KEEP, to close when the command ends; or 1, the command's exit
 * status, once said why not. */
int hold_broker(const char *command, const char *home, struct client_conn **keep);

#endif
