/* tuner show (being written). */
#include "tuner/cmd.h"
#include "tuner/common.h"

int cmd_show(int argc, char **argv, const struct globals *g)
{
	(void)argc;
	(void)argv;
	(void)g;
	error("'show' is not written yet");
	return EX_SOFTWARE;
}
