/* Unit tests: error() messages captured instead of printed, the first kept, all counted. */
#ifndef TUNER_TEST_CAPTURE_H
#define TUNER_TEST_CAPTURE_H

#include <stdio.h>
#include <string.h>

#include "tuner/common.h"

static char captured[8192]; /* the first error's message since capture_start() */
static int nerrors;         /* error()s since capture_start(); warnings are not counted */

static inline void capture(const char *prefix, const char *msg)
{
	if (strcmp(prefix, "error: "))
		return;
	if (!nerrors++)
		snprintf(captured, sizeof(captured), "%s", msg);
}

/* Forget what was captured (and start capturing, if not yet). */
static inline void capture_start(void)
{
	captured[0] = '\0';
	nerrors = 0;
	set_error_routine(capture);
}

static inline void capture_stop(void)
{
	set_error_routine(NULL);
}

#endif
