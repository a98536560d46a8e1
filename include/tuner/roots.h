/* The directories a daemon reads jobs from: a job is data, never a path elsewhere on the host. */
#ifndef TUNER_ROOTS_H
#define TUNER_ROOTS_H

#include <stddef.h>

/* Directories as realpath() gives them: no symlink, no "..", no trailing slash. */
struct roots {
	char **dir;
	size_t n, alloc;
};

/* Add a directory (resolved; it must exist). 0, or error() naming it. */
int roots_add(struct roots *r, const char *dir);
void roots_release(struct roots *r);

/*
 * Whether path, resolved (symlinks followed, ".." taken), lies in one of the
 * roots: its resolved form (caller frees), or NULL when it does not or cannot
 * be resolved. Nothing is read or printed.
 */
char *roots_resolve(const struct roots *r, const char *path);

/*
 * The same, with an error() when it is refused: "'PATH' is outside the
 * directories this daemon reads jobs from (--root A, --root B)". what names
 * the file ("config", "recording"). 0 with *resolved (may be NULL), or -1.
 */
int roots_check(const struct roots *r, const char *what, const char *path, char **resolved);

/* "A, B" for messages; caller frees. */
char *roots_describe(const struct roots *r);

/*
 * From now on every read_file() of this process must lie in r, or in the
 * extra directories of also (the daemon's own cache); anything else is
 * refused before it is opened, with an error() naming the path only (errno
 * EACCES), so that a refused file never reaches a log or the database. r and
 * also must outlive the process's reads; NULL ends the confinement.
 */
void roots_confine(const struct roots *r, const struct roots *also);

#endif
