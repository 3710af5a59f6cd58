/* Opening and reading the files a user names (models, text, records):
 * anything but a regular file is refused with a message instead of being
 * read (a directory reads as an error, a FIFO or device would block or never
 * end), and read errors are reported, not taken for the end of the file. */
#ifndef ZINC_FILE_H
#define ZINC_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "status.h"

/* "a directory", "a FIFO", ... for the file type bits of st_mode. */
const char *zn_file_kind(mode_t mode);

/* Opens path read-only without blocking on FIFOs, refuses what is not a
 * regular file (ZN_ERR_IO, "PATH: not a regular file (a FIFO)"); a missing
 * file is ZN_ERR_NOT_FOUND. *fd is a blocking descriptor; *size may be NULL. */
zn_status zn_file_open_regular(const char *path, int *fd, size_t *size, zn_err *err);

/* The same as a stdio stream ("r" mode); the caller fcloses it. */
zn_status zn_file_fopen_regular(const char *path, FILE **f, zn_err *err);

/* Reads the whole regular file (at most max bytes, else ZN_ERR_ARG naming
 * the limit) into a NUL-terminated malloc'ed *buf of *len bytes. */
zn_status zn_file_read_all(const char *path, size_t max, char **buf, size_t *len, zn_err *err);

/* Reads f to its end the same way (a pipe or stdin); name is for messages. */
zn_status zn_file_read_stream(FILE *f, const char *name, size_t max, char **buf, size_t *len, zn_err *err);

/* Creates or opens path for writing as a regular file: oflags are open()'s
 * (O_WRONLY | O_TRUNC, O_RDWR | O_APPEND), mode fdopen()'s ("w", "a+");
 * a FIFO, directory or device there is refused as above instead of being
 * waited on or written through. */
zn_status zn_file_create_regular(const char *path, int oflags, const char *mode, FILE **f, zn_err *err);

#endif
