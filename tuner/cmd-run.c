/* tuner run (being written). */
#include "tuner/cmd.h"
#include "tuner/common.h"

int cmd_run(int argc, char **argv, const struct globals *g)
{
	(void)argc;
	(void)argv;
	(void)g;
	error("'run' is not written yet");
	return EX_SOFTWARE;
}
