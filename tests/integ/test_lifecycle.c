/* Placeholder until the lifecycle suite lands. */
#include "harness.h"

Suite *suite_view_lifecycle(void)
{
	return suite_create("view_lifecycle");
}
