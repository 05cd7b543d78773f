/* Classification and output text: text or binary samples, credentials
 * in a text (never read out of bounds), UTF-8
 * cleaning (always valid UTF-8 out), middle truncation (never over the
 * limit), the identity prefix (always one of three shapes). */
#include "fuzz.h"
#include "exec/env.h"
#include "exec/output.h"
#include "common/utf8.h"
#include "store/secrets.h"
#include "store/snapshot.h"

static size_t chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t keep;

	(void)snapshot_text_sample(data, size);
	(void)secrets_find((const char *)data, size);
	char *clean = utf8_clean((const char *)data, size, &keep);
	if (!clean || keep > 3)
		abort();
	char *all = utf8_clean((const char *)data, size, NULL);
	/* What cleaning leaves is text by the snapshot's rules too. */
	if (!all || !snapshot_text_sample((const uint8_t *)all, strlen(all)))
		abort();
	size_t max = 100 + size % 200;
	char *cut = output_middle_truncate(all, max);
	if (!cut || chars(cut) > max || (chars(all) <= max && strcmp(cut, all)))
		abort();
	char *prefix = NULL;
	if (identity_prefix((const char *)data, size, &prefix) < 0 ||
	    (*prefix && strncmp(prefix, "export DEERFLOW_CHANNEL_USER_ID='", 33) &&
	     strcmp(prefix, "unset DEERFLOW_CHANNEL_USER_ID; ")))
		abort();
	free(prefix);
	free(cut);
	free(all);
	free(clean);
	return 0;
}
