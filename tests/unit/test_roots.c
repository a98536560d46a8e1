/* Unit tests for the roots: what a daemon may read, and that nothing else is opened. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "tuner/common.h"
#include "tuner/roots.h"

static char dir[64];

static char *at(const char *rel)
{
	return xasprintf("%s/%s", dir, rel);
}

static void put(const char *rel, const char *text)
{
	char *p = at(rel);
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static int setup(void **state)
{
	char *p;

	snprintf(dir, sizeof(dir), "/tmp/test_roots.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	/* root/ holds a job, root2/ is a sibling whose name extends it, out/ is elsewhere */
	p = at("root");
	mkdir(p, 0755);
	free(p);
	p = at("root/sub");
	mkdir(p, 0755);
	free(p);
	p = at("root2");
	mkdir(p, 0755);
	free(p);
	p = at("out");
	mkdir(p, 0755);
	free(p);
	put("root/job.yaml", "job\n");
	put("root/sub/t.yaml", "template\n");
	put("root2/x.yaml", "sibling\n");
	put("out/secret", "SECRET-CONTENT\n");
	{
		char *target = at("out/secret"), *link = at("root/link");

		assert_int_equal(symlink(target, link), 0);
		free(target);
		free(link);
	}
	capture_start();
	return 0;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static int teardown(void **state)
{
	roots_confine(NULL, NULL);
	capture_stop();
	return nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void add_root(struct roots *r, const char *rel)
{
	char *p = at(rel);

	assert_int_equal(roots_add(r, p), 0);
	free(p);
}

static void test_resolve(void **state)
{
	struct roots r = {0};
	char *p, *abs;
	struct {
		const char *rel;
		int inside;
	} cases[] = {
	    {"root/job.yaml", 1},     {"root/sub/../job.yaml", 1},
	    {"root/sub/t.yaml", 1},   {"root/../out/secret", 0},
	    {"root/link", 0},    /* a symlink out of the root */
	    {"root2/x.yaml", 0}, /* a name that only starts alike */
	    {"root/missing.yaml", 0},
	};
	size_t i;

	add_root(&r, "root");
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		p = at(cases[i].rel);
		abs = roots_resolve(&r, p);
		if (cases[i].inside)
			assert_non_null(abs);
		else if (abs)
			fail_msg("'%s' resolved inside the root as '%s'", cases[i].rel, abs);
		free(abs);
		free(p);
	}
	/* a root that is no directory */
	p = at("root/job.yaml");
	assert_int_equal(roots_add(&r, p), -1);
	assert_non_null(strstr(captured, "not a directory"));
	free(p);
	roots_release(&r);
}

static void test_check_message(void **state)
{
	struct roots r = {0};
	char *p = at("out/secret"), *abs = NULL;

	add_root(&r, "root");
	capture_start();
	assert_int_equal(roots_check(&r, "config", p, &abs), -1);
	assert_null(abs);
	assert_non_null(strstr(captured, "config '"));
	assert_non_null(strstr(captured, "is outside the directories this daemon reads jobs from"));
	assert_non_null(strstr(captured, "--root "));
	free(p);
	p = at("root/sub/../job.yaml");
	assert_int_equal(roots_check(&r, "config", p, &abs), 0);
	assert_non_null(strstr(abs, "/root/job.yaml"));
	free(abs);
	free(p);
	roots_release(&r);
}

/* Confined, read_file() opens nothing outside, and says so without the file's content. */
static void test_confine(void **state)
{
	struct roots r = {0}, also = {0};
	char *text = NULL, *p;
	size_t len;

	add_root(&r, "root");
	add_root(&also, "root2");
	roots_confine(&r, &also);

	p = at("root/job.yaml");
	assert_int_equal(read_file(p, &text, &len), 0);
	assert_string_equal(text, "job\n");
	free(text);
	free(p);
	p = at("root2/x.yaml"); /* the extra directory */
	assert_int_equal(read_file(p, &text, &len), 0);
	free(text);
	free(p);

	const char *refused[] = {"out/secret", "root/link", "root/../out/secret"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		capture_start();
		text = NULL;
		p = at(refused[i]);
		errno = 0;
		assert_int_equal(read_file(p, &text, &len), -1);
		assert_int_equal(errno, EACCES);
		assert_null(text);
		assert_non_null(strstr(captured, "is outside the directories"));
		assert_null(strstr(captured, "SECRET"));
		free(p);
	}
	roots_confine(NULL, NULL);
	p = at("out/secret");
	assert_int_equal(read_file(p, &text, &len), 0); /* unconfined again */
	free(text);
	free(p);
	roots_release(&r);
	roots_release(&also);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_message, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_confine, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
