/* Placeholder until the confine suite lands. */
#include "harness.h"

Suite *suite_view_confine(void)
{
	return suite_create("view_confine");
}
