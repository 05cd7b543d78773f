/* Placeholder until the tools suite lands. */
#include "harness.h"

Suite *suite_view_tools(void)
{
	return suite_create("view_tools");
}
