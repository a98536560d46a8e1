/* Confine what a daemon reads to the directories it was given (--root). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tuner/common.h"
#include "tuner/roots.h"

int roots_add(struct roots *r, const char *dir)
{
	char *abs = realpath(dir, NULL);
	struct stat st;

	if (!abs)
		return error("cannot use '%s' as a root: %s", dir, strerror(errno));
	if (stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)) {
		free(abs);
		return error("cannot use '%s' as a root: not a directory", dir);
	}
	ALLOC_GROW(r->dir, r->n + 1, r->alloc);
	r->dir[r->n++] = abs;
	return 0;
}

void roots_release(struct roots *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		free(r->dir[i]);
	free(r->dir);
	memset(r, 0, sizeof(*r));
}

/* Whether the resolved path abs is dir or lies below it ("/a/bc" is not below "/a/b"). */
static int below(const char *dir, const char *abs)
{
	size_t n = strlen(dir);

	if (strncmp(dir, abs, n))
		return 0;
	return abs[n] == '\0' || abs[n] == '/' || (n == 1 && dir[0] == '/');
}

static int contains(const struct roots *r, const char *abs)
{
	size_t i;

	for (i = 0; r && i < r->n; i++)
		if (below(r->dir[i], abs))
			return 1;
	return 0;
}

char *roots_resolve(const struct roots *r, const char *path)
{
	char *abs = realpath(path, NULL);

	if (abs && contains(r, abs))
		return abs;
	free(abs);
	return NULL;
}

char *roots_describe(const struct roots *r)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	sb_adds(&sb, "");
	for (i = 0; i < r->n; i++)
		sb_addf(&sb, "%s--root %s", i ? ", " : "", r->dir[i]);
	if (!r->n)
		sb_adds(&sb, "none given");
	return sb_detach(&sb);
}

int roots_check(const struct roots *r, const char *what, const char *path, char **resolved)
{
	char *abs = realpath(path, NULL), *list;

	if (resolved)
		*resolved = NULL;
	if (!abs)
		return error("cannot read %s '%s': %s", what, path, strerror(errno));
	if (!contains(r, abs)) {
		list = roots_describe(r);
		error("%s '%s' is outside the directories this daemon reads jobs from (%s)", what,
		      path, list);
		free(list);
		free(abs);
		return -1;
	}
	if (resolved)
		*resolved = abs;
	else
		free(abs);
	return 0;
}

/* ------------------------------------------------------------ confinement */

static const struct roots *confined, *confined_also;

static int guard(const char *path)
{
	char *abs = realpath(path, NULL), *list;
	int ok;

	if (!abs)
		return 0; /* missing: the read fails on its own, and says so */
	ok = contains(confined, abs) || contains(confined_also, abs);
	free(abs);
	if (ok)
		return 0;
	list = roots_describe(confined);
	error("'%s' is outside the directories this daemon reads jobs from (%s): not read", path,
	      list);
	free(list);
	errno = EACCES;
	return -1;
}

void roots_confine(const struct roots *r, const struct roots *also)
{
	confined = r;
	confined_also = also;
	set_read_guard(r ? guard : NULL);
}
