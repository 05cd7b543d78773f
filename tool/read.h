/* read.h - a file of the view read as the reference's text mode reads
 * it (tool/lines.h), through a descriptor: what read_file and
 * str_replace read. */
#ifndef SBX_TOOL_READ_H
#define SBX_TOOL_READ_H

#include "lines.h"

/* Reads FD from its start into L (set up as lines.h says), up to its
 * end or L->done. Returns 0 (L->invalid set if it is not UTF-8) or
 * -errno. */
int read_text(int fd, struct lines *l);

#endif
