/* Placeholder until the posix suite lands. */
#include "harness.h"

Suite *suite_view_posix(void)
{
	return suite_create("view_posix");
}
