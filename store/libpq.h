/* libpq.h - libpq, loaded the first time a PostgreSQL store is opened.
 *
 * A program on the embedded SQLite store never maps libpq nor the twenty
 * libraries it needs (Kerberos, LDAP, TLS): their loading and relocation
 * was ~8 ms of every command's start, and memory in every view daemon.
 * libpq_load() is thread-safe and loads once; the table it returns stays
 * valid for the process's life (the library is never unloaded), and its
 * members are libpq's functions, called by their own names: pq->PQexec().
 */
#ifndef SBX_LIBPQ_H
#define SBX_LIBPQ_H

#include <libpq-fe.h>
#include <stddef.h>

#define LIBPQ_FUNCTIONS(X)      \
	X(PQclear)              \
	X(PQcmdTuples)          \
	X(PQconnectdb)          \
	X(PQconsumeInput)       \
	X(PQerrorMessage)       \
	X(PQescapeIdentifier)   \
	X(PQexec)               \
	X(PQexecPrepared)       \
	X(PQfinish)             \
	X(PQfreemem)            \
	X(PQgetisnull)          \
	X(PQgetvalue)           \
	X(PQnfields)            \
	X(PQnotifies)           \
	X(PQntuples)            \
	X(PQparameterStatus)    \
	X(PQprepare)            \
	X(PQreset)              \
	X(PQresultErrorField)   \
	X(PQresultStatus)       \
	X(PQsetNoticeProcessor) \
	X(PQsocket)             \
	X(PQstatus)             \
	X(PQtransactionStatus)  \
	X(PQunescapeBytea)

struct libpq {
#define LIBPQ_MEMBER(f) typeof(f) *f;
	LIBPQ_FUNCTIONS(LIBPQ_MEMBER)
#undef LIBPQ_MEMBER
};

/* libpq's functions, or NULL with the reason in ERR (not installed:
 * Debian's libpq5). */
const struct libpq *libpq_load(char *err, size_t errlen);

#endif
