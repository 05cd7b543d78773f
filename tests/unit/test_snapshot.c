/* Snapshots: the classification rules (excluded directories, sensitive
 * names, credentials in the content, binary by name or content, UTF-16,
 * large files), the walk order
 * and limit, symlinks, files vanishing mid-scan, and the round trip
 * through the store, including schema migrations from every version. */
#include "store/secrets.h"
#include "store/snapshot.h"
#include "store/store.h"
#include "common/clock.h"
#include "tests/cmd.h"
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s", test_dir("snap"));
}

/* DIR/REL with CONTENT (LEN bytes), parents made. */
static void put(const char *rel, const void *content, size_t len)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(sh("mkdir -p \"$(dirname '%s')\"", path), 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, len), (ssize_t)len);
	close(fd);
}

static void put_text(const char *rel, const char *text)
{
	put(rel, text, strlen(text));
}

static int open_sub(const char *rel)
{
	char path[PATH_MAX * 2];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_PATH | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static const struct snap_file *find(const struct snapshot *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->files[i].path, path))
			return &s->files[i];
	return NULL;
}

START_TEST(test_snapshot_sensitive_names_on_any_component)
{
	const char *yes[] = { "password.txt",
			      "api_key.txt",
			      "apikey",
			      "private_key.json",
			      ".env",
			      ".env.local",
			      "a/secrets/notes.md",
			      "TOKEN.md",
			      "deploy/server.PEM",
			      "ssh/id.key",
			      "my-credentials/x" };
	const char *no[] = { "report.txt", "env", "a/.envrc", "keys.txt", "notes/pem" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		ck_assert_msg(snapshot_sensitive(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		ck_assert_msg(!snapshot_sensitive(no[i]), "%s", no[i]);
}
END_TEST

/* Beyond the reference: *.env, OpenSSH's private keys (not their public
 * halves), .netrc, _netrc, .pgpass. */
START_TEST(test_snapshot_sensitive_names_beyond_the_reference)
{
	const char *yes[] = { "prod.env",
			      "config/Staging.ENV",
			      ".env.",
			      "id_rsa",
			      "id_dsa",
			      "id_ecdsa",
			      "home/.ssh/ID_ED25519",
			      "id_ecdsa_sk",
			      "id_ed25519_sk",
			      ".netrc",
			      "_netrc",
			      ".pgpass",
			      ".git-credentials" };
	const char *no[] = {
		"id_rsa.pub", ".ssh/id_ed25519.pub", "id_rsa_notes.md", "environment.txt", "env.md",
		"netrc",      "pgpass.md",	     ".npmrc",		"known_hosts"
	};

	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		ck_assert_msg(snapshot_sensitive(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		ck_assert_msg(!snapshot_sensitive(no[i]), "%s", no[i]);
}
END_TEST

/* Each credential format found, in a sentence as it appears in a file,
 * and a near miss of each that is not. The tokens are made up, and split
 * so that a secret scanner does not flag this file. */
START_TEST(test_secrets_each_kind_and_its_near_miss)
{
	static const struct {
		const char *text, *kind;
	} cases[] = {
		{ "x\n-----BEGIN RSA "
		  "PRIVATE KEY-----\nMIIE\n",
		  "private_key" },
		{ "-----BEGIN OPENSSH "
		  "PRIVATE KEY-----\nb3Blbn",
		  "private_key" },
		{ "-----BEGIN EC "
		  "PRIVATE KEY-----",
		  "private_key" },
		{ "-----BEGIN DSA "
		  "PRIVATE KEY-----",
		  "private_key" },
		{ "-----BEGIN "
		  "PRIVATE KEY-----",
		  "private_key" },
		{ "-----BEGIN ENCRYPTED "
		  "PRIVATE KEY-----",
		  "private_key" },
		{ "-----BEGIN PGP "
		  "PRIVATE KEY BLOCK-----",
		  "private_key" },
		{ "-----BEGIN PUBLIC KEY-----\n", NULL },
		{ "-----BEGIN RSA "
		  "PRIVATE KEY\n",
		  NULL },
		{ "aws_access_key_id = AK"
		  "IAIOSFODNN7EXAMPLE\n",
		  "aws_access_key_id" },
		{ "\"AS"
		  "IAY34FZKBOKMUTVV7A\"",
		  "aws_access_key_id" },
		{ "AK"
		  "IAIOSFODNN7EXAMPL\n",
		  NULL }, /* 15 */
		{ "AK"
		  "IAIOSFODNN7EXAMPLEX\n",
		  NULL }, /* 17 */
		{ "AK"
		  "IAIOSFODNN7EXAMPLEx\n",
		  NULL }, /* a lowercase byte goes on */
		{ "token: gh"
		  "p_0123456789abcdefghijABCDEFGHIJ012345",
		  "github_token" },
		{ "gh"
		  "o_0123456789abcdefghijABCDEFGHIJ012345",
		  "github_token" },
		{ "gh"
		  "u_0123456789abcdefghijABCDEFGHIJ012345",
		  "github_token" },
		{ "gh"
		  "s_0123456789abcdefghijABCDEFGHIJ012345",
		  "github_token" },
		{ "gh"
		  "r_0123456789abcdefghijABCDEFGHIJ012345",
		  "github_token" },
		{ "https://x:github"
		  "_pat_11ABCDEFG0123456789_abcdefghij@github.com",
		  "github_token" },
		{ "gh"
		  "p_0123456789abcdefghijABCDEFGHIJ01234",
		  NULL }, /* 35 */
		{ "xgh"
		  "p_0123456789abcdefghijABCDEFGHIJ012345",
		  NULL }, /* inside a word */
		{ "github"
		  "_pat_11ABCDEFG0123456789_a",
		  NULL }, /* 21 */
		{ "GITLAB=gl"
		  "pat-xY3z_aBcDeFgHiJkLmNo",
		  "gitlab_token" },
		{ "gl"
		  "pat-xY3z_aBcDeFgHiJkLmN",
		  NULL }, /* 19 */
		{ "xo"
		  "xb-123456789012-abcDEF",
		  "slack_token" },
		{ "xo"
		  "xp-1234-5678-90abcd",
		  "slack_token" },
		{ "xo"
		  "xc-123456789012-abcDEF",
		  NULL }, /* not a kind we know */
		{ "xo"
		  "xb-1234-5678-90ab",
		  NULL }, /* 14 */
		{ "API_KEY=sk"
		  "-live-4f9aQ2mZ7xT1bV8nC3kL6pR0",
		  "openai_key" },
		{ "sk"
		  "-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
		  "openai_key" },
		{ "sk"
		  "-ant-api03-Zx9Yw8Vu7Ts6Rq5P",
		  "openai_key" },
		{ "sk"
		  "-live-4f9aQ2mZ7xT1bV",
		  NULL }, /* 19 */
		{ "pip install sk"
		  "-learn-the-basics-of-machine-learning",
		  NULL }, /* no digit */
		{ "/dev/disk"
		  "-by-id-0123456789abcdefghijk",
		  NULL }, /* not a word's start */
		{ "STRIPE=sk"
		  "_live_51HabcDEFghiJKLmno",
		  "stripe_key" },
		{ "rk"
		  "_live_51HabcDEFghiJKLmno",
		  "stripe_key" },
		{ "sk"
		  "_live_51HabcDEFghiJKL",
		  NULL }, /* 15 */
		{ "sk"
		  "_test_51HabcDEFghiJKLmnopqrstu",
		  NULL }, /* test mode */
		{ "key=AI"
		  "zaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
		  "google_api_key" },
		{ "AI"
		  "zaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6",
		  NULL }, /* 34 */
		{ "AI"
		  "zaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7",
		  NULL }, /* 36 */
		{ "//registry.npmjs.org/:_authToken=np"
		  "m_0123456789abcdefghijABCDEFGHIJ012345",
		  "npm_token" },
		{ "np"
		  "m_0123456789abcdefghijABCDEFGHIJ012",
		  NULL }, /* 35 */
		{ "Authorization: Bearer ey"
		  "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
		  "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		  "jwt" },
		{ "ey"
		  "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.",
		  NULL }, /* unsigned */
		{ "ey"
		  "JhbGciOiJIUzI1NiJ9.abJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w",
		  NULL },
		{ "ey"
		  "JhbGciOiJIUzI1NiJ9",
		  NULL },
		{ "ey"
		  "JhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w",
		  NULL }, /* 19 */
		{ "the key of the secret is a token, not a password", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *got = secrets_find(cases[i].text, strlen(cases[i].text));
		ck_assert_msg(cases[i].kind ? got && !strcmp(got, cases[i].kind) : !got,
			      "%s: found %s, want %s", cases[i].text, got ? got : "nothing",
			      cases[i].kind ? cases[i].kind : "nothing");
	}
	/* Found wherever it is in a longer text, after a long word or in one. */
	char longer[4096];
	memset(longer, 'w', sizeof(longer));
	for (size_t at = 0; at < 200; at++) {
		memcpy(longer + 1000 + at,
		       " AK"
		       "IAIOSFODNN7EXAMPLE ",
		       22);
		ck_assert_msg(secrets_find(longer, sizeof(longer)), "at %zu", at);
		memset(longer + 1000 + at, 'w', 22);
	}
	memcpy(longer + 1000,
	       "wAK"
	       "IAIOSFODNN7EXAMPLE ",
	       22);
	ck_assert_ptr_null(secrets_find(longer, sizeof(longer)));
	/* A token at the very end of the text, and cut by it. */
	const char *end = "x gh"
			  "p_0123456789abcdefghijABCDEFGHIJ012345";
	ck_assert_ptr_nonnull(secrets_find(end, strlen(end)));
	ck_assert_ptr_null(secrets_find(end, strlen(end) - 1));
}
END_TEST

/* A text holding a credential is scanned into the stub of a sensitive
 * name: no hash, its text never handed on to be kept. The whole of a
 * file up to 256 KiB is searched, the 4 KiB sample of a larger one, a
 * UTF-16 text decoded; binary content is never shown, so never searched. */
static int record_kept(void *arg, const struct snap_file *f, const uint8_t *data, size_t len)
{
	(void)data;
	(void)len;
	strcat(arg, strrchr(f->path, '/') + 1);
	strcat(arg, " ");
	return 0;
}

START_TEST(test_snapshot_credentials_in_the_content_are_sensitive)
{
	static char late[100 * 1024], big[SNAPSHOT_HASH_MAX + 100];
	static const char token[] = "gh"
				    "p_0123456789abcdefghijABCDEFGHIJ012345";
	static const char utf16[] = "\xff\xfe"
				    "g\0h\0p\0_\0"
				    "0\0"
				    "1\0"
				    "2\0"
				    "3\0"
				    "4\0"
				    "5\0"
				    "6\0"
				    "7\0"
				    "8\0"
				    "9\0"
				    "a\0b\0c\0d\0e\0f\0g\0h\0i\0j\0A\0B\0C\0D\0E\0F\0G\0H\0"
				    "I\0J\0"
				    "0\0"
				    "1\0"
				    "2\0"
				    "3\0"
				    "4\0"
				    "5\0";
	char kept[1024] = "";
	struct snapshot s;

	static const char key[] = "\n-----BEGIN OPENSSH "
				  "PRIVATE KEY-----\n";
	char notes[128], blob[64] = { 0 };

	put_text("ws/harmless.txt", "nothing to see\n");
	snprintf(notes, sizeof(notes), "deploy with %s\n", token);
	put_text("ws/notes.txt", notes);
	memset(late, 'l', sizeof(late));
	memcpy(late + 90 * 1024, token, strlen(token));
	late[90 * 1024 - 1] = '\n';
	put("ws/late.txt", late, sizeof(late));
	memset(big, 'b', sizeof(big));
	memcpy(big + 100, key, strlen(key));
	put("ws/big-key.txt", big, sizeof(big));
	memset(big, 'b', sizeof(big));
	memcpy(big + 8192, token, strlen(token));
	big[8191] = ' ';
	put("ws/big-late.txt", big, sizeof(big));
	put("ws/utf16.txt", utf16, sizeof(utf16) - 1);
	memcpy(blob + 1, token, strlen(token));
	put("ws/blob.dat", blob, sizeof(blob));

	int ws = open_sub("ws");
	ck_assert_int_eq(snapshot_take(ws, -1, 100, NULL, NULL, record_kept, kept, &s), 0);
	ck_assert_str_eq(kept, "harmless.txt ");
	const char *stubs[] = { "notes.txt", "late.txt", "big-key.txt", "utf16.txt" };
	for (size_t i = 0; i < sizeof(stubs) / sizeof(*stubs); i++) {
		char path[128];
		snprintf(path, sizeof(path), "/mnt/user-data/workspace/%s", stubs[i]);
		const struct snap_file *f = find(&s, path);
		ck_assert_msg(f->sensitive && !f->hashed && !f->binary && !f->large, "%s",
			      stubs[i]);
	}
	ck_assert_int_eq(find(&s, "/mnt/user-data/workspace/late.txt")->size, sizeof(late));
	const struct snap_file *f = find(&s, "/mnt/user-data/workspace/big-late.txt");
	ck_assert(f->large && !f->sensitive); /* past its sample: large, not shown */
	f = find(&s, "/mnt/user-data/workspace/blob.dat");
	ck_assert(f->binary && !f->sensitive && f->hashed);
	f = find(&s, "/mnt/user-data/workspace/harmless.txt");
	ck_assert(f->hashed && !f->sensitive);
	snapshot_free(&s);
	close(ws);
}
END_TEST

START_TEST(test_snapshot_binary_by_name)
{
	ck_assert(snapshot_binary_name("a.png"));
	ck_assert(snapshot_binary_name("A.PNG"));
	ck_assert(snapshot_binary_name("lib.so"));
	ck_assert(snapshot_binary_name("x.tar"));
	ck_assert(!snapshot_binary_name("x.tar.txt"));
	ck_assert(!snapshot_binary_name("Makefile"));
	ck_assert(!snapshot_binary_name(".gz")); /* a dot file, no suffix */
	ck_assert(snapshot_excluded_dir("node_modules"));
	ck_assert(snapshot_excluded_dir(".mcp"));
	ck_assert(!snapshot_excluded_dir("src"));
	/* On a path: any directory, never the file's own name. */
	ck_assert(snapshot_path_excluded("/mnt/user-data/workspace/a/.git/HEAD"));
	ck_assert(snapshot_path_excluded("/mnt/user-data/workspace/node_modules/x/y.js"));
	ck_assert(!snapshot_path_excluded("/mnt/user-data/workspace/a/build.txt"));
	ck_assert(!snapshot_path_excluded("/mnt/user-data/workspace/build"));
	ck_assert(!snapshot_path_excluded("/mnt/user-data/workspace/src/main.c"));
}
END_TEST

START_TEST(test_snapshot_text_or_binary_by_content)
{
	static const uint8_t utf16[] = { 0xff, 0xfe, 'h', 0, 'i', 0, '\n', 0 };
	static const uint8_t utf16_lone[] = { 0xff, 0xfe, 0x00, 0xdc, 'x', 0 };
	static const uint8_t cut[] = { 'a', 0xe2, 0x82 }; /* € cut short */
	static const uint8_t euro[] = { 0xe2, 0x82, 0xac };
	static const uint8_t nul[] = { 'a', 0, 'b' };
	static const uint8_t bad[] = { 'a', 0xff, 'b' };
	static const uint8_t overlong[] = { 0xc0, 0x80 };
	static const uint8_t surrogate[] = { 0xed, 0xa0, 0x80 };
	static const uint8_t bom8[] = { 0xef, 0xbb, 0xbf, 'x' };

	ck_assert(snapshot_text_sample(utf16, sizeof(utf16)));
	ck_assert(!snapshot_text_sample(utf16_lone, sizeof(utf16_lone)));
	ck_assert(snapshot_text_sample(cut, sizeof(cut)));
	ck_assert(snapshot_text_sample(euro, sizeof(euro)));
	ck_assert(snapshot_text_sample(bom8, sizeof(bom8)));
	ck_assert(!snapshot_text_sample(nul, sizeof(nul)));
	ck_assert(!snapshot_text_sample(bad, sizeof(bad)));
	ck_assert(!snapshot_text_sample(overlong, sizeof(overlong)));
	ck_assert(!snapshot_text_sample(surrogate, sizeof(surrogate)));
}
END_TEST

START_TEST(test_snapshot_walk_rules)
{
	static char big[SNAPSHOT_HASH_MAX + 1], edge[SNAPSHOT_HASH_MAX];
	char *sample = malloc(SNAPSHOT_SAMPLE + 2);
	struct snapshot s;

	/* A 4 KiB sample ending inside a UTF-8 character is still text. */
	memset(sample, 'x', SNAPSHOT_SAMPLE + 2);
	memcpy(sample + SNAPSHOT_SAMPLE - 1, "\xe2\x82\xac", 3);
	put("ws/b.txt", "bee\n", 4);
	put("ws/a.txt", "ay\n", 3);
	put("ws/sub/c.txt", "see\n", 4);
	put("ws/node_modules/x.js", "x", 1);
	put("ws/deep/.git/config", "x", 1);
	put("ws/img.png", "not really a png", 16);
	put("ws/nul.dat", "a\0b", 3);
	put("ws/.env", "SECRET=1", 8);
	put("ws/boundary.txt", sample, SNAPSHOT_SAMPLE + 2);
	memset(big, 'b', sizeof(big));
	memset(edge, 'e', sizeof(edge));
	put("ws/big.txt", big, sizeof(big));
	put("ws/edge.txt", edge, sizeof(edge));
	put("out/report.md", "# r\n", 4);
	char link[PATH_MAX * 2];
	snprintf(link, sizeof(link), "%s/ws/to-etc", dir);
	ck_assert_int_eq(symlink("/etc", link), 0);
	free(sample);

	int ws = open_sub("ws"), out = open_sub("out");
	ck_assert_int_eq(snapshot_take(ws, out, 100, NULL, NULL, NULL, NULL, &s), 0);
	ck_assert(!s.truncated);
	/* Files of a directory by name, then its subdirectories; workspace
	 * before outputs; excluded directories nowhere. */
	const char *order[] = { ".env",	    "a.txt",   "b.txt",	  "big.txt", "boundary.txt",
				"edge.txt", "img.png", "nul.dat", "to-etc",  "sub/c.txt" };
	ck_assert_int_eq(s.n, 11);
	for (size_t i = 0; i < 10; i++) {
		char want[256];
		snprintf(want, sizeof(want), "/mnt/user-data/workspace/%s", order[i]);
		ck_assert_str_eq(s.files[i].path, want);
		ck_assert_str_eq(s.files[i].root, "workspace");
	}
	ck_assert_str_eq(s.files[10].path, "/mnt/user-data/outputs/report.md");
	ck_assert_str_eq(s.files[10].root, "outputs");

	const struct snap_file *f = find(&s, "/mnt/user-data/workspace/to-etc");
	ck_assert(f->symlink);
	ck_assert_str_eq(f->target, "/etc");
	f = find(&s, "/mnt/user-data/workspace/.env");
	ck_assert(f->sensitive && !f->hashed && !f->binary);
	f = find(&s, "/mnt/user-data/workspace/img.png");
	ck_assert(f->binary && f->hashed);
	f = find(&s, "/mnt/user-data/workspace/nul.dat");
	ck_assert(f->binary);
	f = find(&s, "/mnt/user-data/workspace/boundary.txt");
	ck_assert(!f->binary);
	f = find(&s, "/mnt/user-data/workspace/big.txt");
	ck_assert(f->large && !f->hashed);
	ck_assert_int_eq(f->size, SNAPSHOT_HASH_MAX + 1);
	f = find(&s, "/mnt/user-data/workspace/edge.txt");
	ck_assert(!f->large && f->hashed);
	f = find(&s, "/mnt/user-data/workspace/a.txt");
	ck_assert(f->hashed && !f->binary && !f->sensitive);
	/* sha256("ay\n") */
	ck_assert_int_eq(f->sha256[0], 0x51);
	ck_assert_int_eq(f->sha256[31], 0x0f);
	snapshot_free(&s);
	close(ws);
	close(out);
}
END_TEST

/* A file that may be diffed is text only if it decodes whole, as the
 * reference decodes it: a character cut by the end of the file (even
 * right at the 4 KiB sample's end) or invalid UTF-8 past the sample makes
 * it binary; a NUL past the sample does not; UTF-16 needs its BOM and
 * an even length. */
START_TEST(test_snapshot_text_decodes_whole)
{
	static char cut[SNAPSHOT_SAMPLE], late[5000], nul[5000];
	static const char le[] = "\xff\xfeh\0i\0\n\0", be[] = "\xfe\xff\0h\0i\0\n";
	struct snapshot s;

	memset(cut, 'x', sizeof(cut));
	memcpy(cut + sizeof(cut) - 2, "\xe2\x82", 2); /* € without its last byte */
	memset(late, 'l', sizeof(late));
	late[4500] = (char)0xff;
	memset(nul, 'n', sizeof(nul));
	nul[4500] = '\0';
	put("ws/cut.txt", cut, sizeof(cut));
	put("ws/late.txt", late, sizeof(late));
	put("ws/nul.txt", nul, sizeof(nul));
	put("ws/le.txt", le, sizeof(le) - 1);
	put("ws/be.txt", be, sizeof(be) - 1);
	put("ws/odd.txt", le, sizeof(le) - 2);
	int ws = open_sub("ws");
	ck_assert_int_eq(snapshot_take(ws, -1, 100, NULL, NULL, NULL, NULL, &s), 0);
	ck_assert(find(&s, "/mnt/user-data/workspace/cut.txt")->binary);
	ck_assert(find(&s, "/mnt/user-data/workspace/late.txt")->binary);
	ck_assert(!find(&s, "/mnt/user-data/workspace/nul.txt")->binary);
	ck_assert(!find(&s, "/mnt/user-data/workspace/le.txt")->binary);
	ck_assert(!find(&s, "/mnt/user-data/workspace/be.txt")->binary);
	ck_assert(find(&s, "/mnt/user-data/workspace/odd.txt")->binary);
	snapshot_free(&s);
	close(ws);

	/* The text a diff gets: no BOM, UTF-16 as UTF-8 (a pair too). */
	char *t;
	size_t n;
	ck_assert_int_eq(snapshot_text_decode("\xef\xbb\xbf"
					      "bom text\n",
					      12, &t, &n),
			 0);
	ck_assert_str_eq(t, "bom text\n");
	free(t);
	ck_assert_int_eq(snapshot_text_decode(le, sizeof(le) - 1, &t, &n), 0);
	ck_assert_str_eq(t, "hi\n");
	free(t);
	ck_assert_int_eq(snapshot_text_decode(be, sizeof(be) - 1, &t, &n), 0);
	ck_assert_str_eq(t, "hi\n");
	free(t);
	ck_assert_int_eq(snapshot_text_decode("\xff\xfe\x3d\xd8\x00\xde\xac\x20", 8, &t, &n), 0);
	ck_assert_str_eq(t, "\xf0\x9f\x98\x80\xe2\x82\xac"); /* U+1F600 U+20AC */
	free(t);
	ck_assert_int_eq(snapshot_text_decode("a\0b", 3, &t, &n), 0);
	ck_assert_int_eq(n, 3);
	free(t);
	ck_assert_int_eq(snapshot_text_decode(cut, sizeof(cut), &t, &n), -EILSEQ);
	ck_assert_int_eq(snapshot_text_decode("\xff\xfe\x00\xd8", 4, &t, &n), -EILSEQ);
}
END_TEST

START_TEST(test_snapshot_limit_truncates_and_skips_later_roots)
{
	struct snapshot s;

	for (int i = 0; i < 5; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "ws/f%d", i);
		put_text(rel, "x");
	}
	put_text("out/o", "x");
	int ws = open_sub("ws"), out = open_sub("out");
	ck_assert_int_eq(snapshot_take(ws, out, 3, NULL, NULL, NULL, NULL, &s), 0);
	ck_assert(s.truncated);
	ck_assert_int_eq(s.n, 3);
	snapshot_free(&s);
	/* Exactly at the limit is complete. */
	ck_assert_int_eq(snapshot_take(ws, out, 6, NULL, NULL, NULL, NULL, &s), 0);
	ck_assert(!s.truncated);
	ck_assert_int_eq(s.n, 6);
	snapshot_free(&s);
	close(ws);
	close(out);
}
END_TEST

/* The progress callback removes a file the walk has listed but not yet
 * read: it is left out, and the snapshot succeeds. */
static void remove_last(void *arg, size_t files)
{
	(void)files;
	unlink(arg);
}

START_TEST(test_snapshot_a_file_vanishing_mid_scan_is_left_out)
{
	char victim[PATH_MAX * 2];
	struct snapshot s;

	for (int i = 0; i < 300; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "ws/f%03d", i);
		put_text(rel, "x");
	}
	snprintf(victim, sizeof(victim), "%s/ws/f299", dir);
	int ws = open_sub("ws");
	ck_assert_int_eq(snapshot_take(ws, -1, 1000, NULL, remove_last, NULL, victim, &s), 0);
	ck_assert_int_eq(s.n, 299);
	ck_assert(!s.truncated);
	ck_assert_ptr_null(find(&s, "/mnt/user-data/workspace/f299"));
	ck_assert_ptr_nonnull(find(&s, "/mnt/user-data/workspace/f298"));
	snapshot_free(&s);
	close(ws);
}
END_TEST

START_TEST(test_snapshot_round_trips_through_the_store)
{
	char db[PATH_MAX * 2], err[512];
	struct snapshot s, back;
	struct store *st;
	int64_t id;

	put_text("ws/a.txt", "a\n");
	put_text("ws/.env", "x");
	ck_assert_int_eq(symlink("a.txt", strcat(strcpy(db, dir), "/ws/l")), 0);
	int ws = open_sub("ws");
	ck_assert_int_eq(snapshot_take(ws, -1, 10, NULL, NULL, NULL, NULL, &s), 0);
	snprintf(db, sizeof(db), "%s/sbx.db", dir);
	ck_assert_int_eq(store_open_path(db, &st, err, sizeof(err)), 0);
	ck_assert_int_eq(store_snapshot_save(st, "u", "t", &s, 10, 1, &id), 0);
	ck_assert_int_eq(store_snapshot_load(st, id, &back), 0);
	ck_assert_int_eq(back.n, s.n);
	for (size_t i = 0; i < s.n; i++) {
		ck_assert_str_eq(back.files[i].path, s.files[i].path);
		ck_assert_int_eq(back.files[i].hashed, s.files[i].hashed);
		ck_assert_int_eq(back.files[i].sensitive, s.files[i].sensitive);
		ck_assert_int_eq(back.files[i].symlink, s.files[i].symlink);
		ck_assert(!memcmp(back.files[i].sha256, s.files[i].sha256, 32));
	}
	ck_assert_str_eq(find(&back, "/mnt/user-data/workspace/l")->target, "a.txt");
	ck_assert_int_eq(store_snapshot_load(st, id + 100, &back), -ENOENT);
	snapshot_free(&s);
	store_close(st);
	close(ws);
}
END_TEST

/* Until a file whose status is SB counts as settled (snapshot.h): the
 * clock a second past its ctime. */
static void wait_settled(const struct stat *sb)
{
	struct timespec nap = { 0, 10 * 1000000 };

	while (realtime_ns() <= timespec_ns(&sb->st_ctim) + SNAPSHOT_SETTLE_NS)
		nanosleep(&nap, NULL);
}

/* A scan given an earlier one (here back from the store, 70 files: a
 * batch of rows and single ones) reads again only what changed since:
 * a rewrite that kept size and mtime (its ctime moved), and a file whose
 * ctime was not yet settled when the earlier scan saw it; the others are
 * described from it, settled still. */
START_TEST(test_snapshot_reads_again_only_what_changed_since_a_known_one)
{
	char db[PATH_MAX * 2], err[512], kept[4096] = "", name[64];
	struct snapshot first, known, second, third;
	struct store *st;
	struct stat sb;
	int64_t id;

	for (int i = 0; i < 68; i++) {
		snprintf(name, sizeof(name), "ws/f%02d.txt", i);
		put_text(name, "same\n");
	}
	put_text("ws/kept-size.txt", "one\n");
	snprintf(db, sizeof(db), "%s/ws/kept-size.txt", dir);
	ck_assert_int_eq(stat(db, &sb), 0);
	/* the files' ctimes settle: the clock passes a second after them */
	wait_settled(&sb);
	put_text("ws/late.txt", "late\n"); /* not settled at the first scan */
	int ws = open_sub("ws");
	ck_assert_int_eq(snapshot_take(ws, -1, 100, NULL, NULL, record_kept, kept, &first), 0);
	ck_assert_int_eq(first.n, 70);
	ck_assert(find(&first, "/mnt/user-data/workspace/f00.txt")->settled);
	ck_assert(!find(&first, "/mnt/user-data/workspace/late.txt")->settled);
	snprintf(db, sizeof(db), "%s/sbx.db", dir);
	ck_assert_int_eq(store_open_path(db, &st, err, sizeof(err)), 0);
	ck_assert_int_eq(store_snapshot_save(st, "u", "t", &first, 100, 1, &id), 0);
	ck_assert_int_eq(store_snapshot_load(st, id, &known), 0);
	ck_assert_int_eq(known.n, 70);
	for (size_t i = 0; i < known.n; i++) {
		ck_assert_int_eq(known.files[i].settled, first.files[i].settled);
		ck_assert(!known.files[i].settled ||
			  (known.files[i].ino == first.files[i].ino &&
			   known.files[i].ctime_ns == first.files[i].ctime_ns));
	}

	/* rewritten in place, its size and mtime put back */
	snprintf(db, sizeof(db), "%s/ws/kept-size.txt", dir);
	ck_assert_int_eq(stat(db, &sb), 0);
	put_text("ws/kept-size.txt", "two\n");
	struct timespec times[2] = { sb.st_atim, sb.st_mtim };
	ck_assert_int_eq(utimensat(AT_FDCWD, db, times, 0), 0);
	kept[0] = '\0';
	ck_assert_int_eq(snapshot_take(ws, -1, 100, &known, NULL, record_kept, kept, &second), 0);
	ck_assert_str_eq(kept, "kept-size.txt late.txt ");
	const struct snap_file *a = find(&known, "/mnt/user-data/workspace/kept-size.txt"),
			       *b = find(&second, "/mnt/user-data/workspace/kept-size.txt");
	ck_assert(b->hashed && memcmp(a->sha256, b->sha256, SHA256_BYTES));
	ck_assert(!b->settled);
	a = find(&known, "/mnt/user-data/workspace/f67.txt");
	b = find(&second, "/mnt/user-data/workspace/f67.txt");
	ck_assert(b->settled && b->hashed && !memcmp(a->sha256, b->sha256, SHA256_BYTES));
	ck_assert_int_eq(second.n, 70);
	/* what the second scan did not find settled is read the next time */
	kept[0] = '\0';
	ck_assert_int_eq(snapshot_take(ws, -1, 100, &second, NULL, record_kept, kept, &third), 0);
	ck_assert_str_eq(kept, "kept-size.txt late.txt ");
	snapshot_free(&first);
	snapshot_free(&known);
	snapshot_free(&second);
	snapshot_free(&third);
	store_close(st);
	close(ws);
}
END_TEST

/* Asserts that B is A, file by file, in the same order. */
static void assert_same_snapshot(const struct snapshot *a, const struct snapshot *b)
{
	ck_assert_int_eq(b->n, a->n);
	for (size_t i = 0; i < a->n; i++) {
		const struct snap_file *x = &a->files[i], *y = &b->files[i];
		ck_assert_str_eq(y->path, x->path);
		ck_assert_str_eq(y->root, x->root);
		ck_assert_int_eq(y->symlink, x->symlink);
		ck_assert_str_eq(y->target ? y->target : "-", x->target ? x->target : "-");
		ck_assert_int_eq(y->size, x->size);
		ck_assert_int_eq(y->mtime_ns, x->mtime_ns);
		ck_assert_int_eq(y->hashed, x->hashed);
		ck_assert(!x->hashed || !memcmp(y->sha256, x->sha256, SHA256_BYTES));
		ck_assert_int_eq(y->sensitive, x->sensitive);
		ck_assert_int_eq(y->settled, x->settled);
		ck_assert(!x->settled || (y->ino == x->ino && y->ctime_ns == x->ctime_ns));
	}
}

/* Rows of snapshot ID in the store DB (and how many say a file is gone). */
static int snapshot_rows(const char *db, int64_t id, int *gone)
{
	char *out = OUT("sqlite3 '%s' 'SELECT count(*), total(gone) FROM snapshot_files"
			" WHERE snapshot = %lld'",
			db, (long long)id);
	int n = -1;
	double g = -1;

	ck_assert_int_eq(sscanf(out, "%d|%lf", &n, &g), 2);
	*gone = (int)g;
	return n;
}

/* A run's end snapshot is kept as its differences from its first: the
 * files that differ, each at its place in the walk, and those gone; read
 * back, it is the whole snapshot, in order. A base must be whole: one
 * saved against a snapshot kept so is kept whole. */
START_TEST(test_snapshot_kept_as_its_differences_from_a_base)
{
	char db[PATH_MAX * 2], err[512], name[PATH_MAX * 2];
	struct snapshot first, known, second, back, third;
	struct store *st;
	int64_t id0, id1, id2;
	int gone;

	for (int i = 0; i < 80; i++) {
		snprintf(name, sizeof(name), "ws/%s/f%02d.txt", i % 2 ? "d" : "e", i);
		put_text(name, "same\n");
	}
	put_text("ws/top.txt", "top\n");
	/* settled, all: the next scan describes them from the first */
	struct stat sb;
	snprintf(name, sizeof(name), "%s/ws/top.txt", dir);
	ck_assert_int_eq(stat(name, &sb), 0);
	wait_settled(&sb);
	int ws = open_sub("ws");
	ck_assert_int_eq(snapshot_take(ws, -1, 100, NULL, NULL, NULL, NULL, &first), 0);
	snprintf(db, sizeof(db), "%s/sbx.db", dir);
	ck_assert_int_eq(store_open_path(db, &st, err, sizeof(err)), 0);
	ck_assert_int_eq(store_snapshot_save(st, "u", "t", &first, 100, 1, &id0), 0);
	ck_assert_int_eq(store_snapshot_load(st, id0, &known), 0);
	ck_assert_int_eq(known.base, 0);
	ck_assert_int_eq(snapshot_rows(db, id0, &gone), 81);

	put_text("ws/d/f01.txt", "changed\n");		      /* changed */
	put_text("ws/d/a-new.txt", "new\n");		      /* new, first of its directory */
	put_text("ws/e/f99.txt", "new\n");		      /* new, last of its directory */
	snprintf(name, sizeof(name), "%s/ws/e/f10.txt", dir); /* gone */
	ck_assert_int_eq(unlink(name), 0);
	snprintf(name, sizeof(name), "%s/ws/top.txt", dir); /* gone, the first file of all */
	ck_assert_int_eq(unlink(name), 0);
	ck_assert_int_eq(snapshot_take(ws, -1, 100, &known, NULL, NULL, NULL, &second), 0);
	ck_assert_int_eq(second.n, 81);
	ck_assert_int_eq(store_snapshot_save_since(st, "u", "t", &second, 100, 2, id0, &known,
						   &id1),
			 0);
	/* the settled files unchanged are not written again */
	int rows = snapshot_rows(db, id1, &gone);
	ck_assert_int_eq(gone, 2);
	char *dump = OUT("sqlite3 '%s' 'SELECT seq, path, gone, ino, ctime_ns FROM snapshot_files"
			 " WHERE snapshot = %lld'",
			 db, (long long)id1);
	ck_assert_msg(rows == 5, "%d rows for 3 files written and 2 gone: %s", rows, dump);
	ck_assert_int_eq(store_snapshot_load(st, id1, &back), 0);
	ck_assert_int_eq(back.base, id0);
	assert_same_snapshot(&second, &back);

	/* a base kept as differences is not one: the next is kept whole */
	ck_assert_int_eq(snapshot_take(ws, -1, 100, &back, NULL, NULL, NULL, &third), 0);
	ck_assert_int_eq(store_snapshot_save_since(st, "u", "t", &third, 100, 3, id1, &back, &id2),
			 0);
	ck_assert_int_eq(snapshot_rows(db, id2, &gone), 81);
	snapshot_free(&back);
	ck_assert_int_eq(store_snapshot_load(st, id2, &back), 0);
	ck_assert_int_eq(back.base, 0);
	assert_same_snapshot(&third, &back);

	/* a snapshot that does not fit its base is refused, not made up */
	ck_assert_int_eq(sh("sqlite3 '%s' 'DELETE FROM snapshot_files WHERE snapshot = %lld"
			    " AND path LIKE \"%%/a-new.txt\"'",
			    db, (long long)id1),
			 0);
	snapshot_free(&back);
	ck_assert_int_eq(store_snapshot_load(st, id1, &back), -EIO);
	/* nor one kept whole that lacks a row (rows come back in any order,
	 * each put at its place) */
	ck_assert_int_eq(sh("sqlite3 '%s' 'DELETE FROM snapshot_files WHERE snapshot = %lld"
			    " AND seq = 40'",
			    db, (long long)id0),
			 0);
	ck_assert_int_eq(store_snapshot_load(st, id0, &back), -EIO);
	snapshot_free(&first);
	snapshot_free(&known);
	snapshot_free(&second);
	snapshot_free(&third);
	store_close(st);
	close(ws);
}
END_TEST

/* A database of every earlier schema version migrates to the current one
 * and keeps its rows. */
static int count_event(void *arg, const struct store_event *e)
{
	ck_assert_str_eq(e->op, "create");
	ck_assert_ptr_null(e->pre);
	++*(int *)arg;
	return 0;
}

static int sum_times(void *arg, const struct store_audit *a)
{
	ck_assert_int_eq(a->last_ns, a->at_ns);
	*(int64_t *)arg += a->times;
	return 0;
}

START_TEST(test_store_migrates_from_every_earlier_version)
{
	char err[512];
	int events = 0;

	for (int v = 0; v < STORE_SCHEMA_VERSION; v++) {
		char db[PATH_MAX + 32];
		struct store *s;

		snprintf(db, sizeof(db), "%s/v%d.db", dir, v);
		ck_assert_int_eq(store_open_version(db, v, &s, err, sizeof(err)), 0);
		ck_assert_int_eq(store_schema_version(s), v);
		store_close(s);
		if (v >= 1) /* a read mark of version 1's shape */
			ck_assert_int_eq(
				sh("sqlite3 '%s' \"INSERT INTO marks (user, thread, path,"
				   " ino, size, mtime_ns, ctime_ns, at_ns) VALUES ('u', 't',"
				   " '/mnt/x', 7, 1, 0, 0, 0)\"",
				   db),
				0);
		/* An ended run with a receipt of before presentations (version
		 * 7 rewrote those: later ones keep what they are given). */
		if (v >= 3 && v < 7)
			ck_assert_int_eq(
				sh("sqlite3 '%s' \"INSERT INTO runs (user, thread, begun_ns,"
				   " ended_ns, before_snapshot, receipt) VALUES ('u', 't', 1, 2, 1,"
				   " '{\\\"run\\\":1,\\\"produced_outputs\\\":[\\\"/mnt/user-data/outputs/r.md\\\"],"
				   "\\\"verdict\\\":\\\"delivered\\\"}')\"",
				   db),
				0);
		if (v >= 4) /* a journal row of that version's shape */
			ck_assert_int_eq(sh("sqlite3 '%s' \"INSERT INTO journal (user, thread,"
					    " at_ns, op, path, pid, comm) VALUES ('u', 't', 1,"
					    " 'create', '/mnt/x', 1, 'sh')\"",
					    db),
					 0);
		if (v >= 1) /* an audit row of version 1's shape */
			ck_assert_int_eq(
				sh("sqlite3 '%s' \"INSERT INTO audit (at_ns, user, thread,"
				   " path, op, pid, comm, reason, mode, allowed) VALUES (5,"
				   " 'u', 't', '/mnt/x', 'write', 1, 'sh', 'never read',"
				   " 'enforce', 0)\"",
				   db),
				0);
		ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), 0);
		ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
		if (v >= 1)
			ck_assert_int_eq(sh("test \"$(sqlite3 '%s' 'SELECT ino FROM marks')\" = 7",
					    db),
					 0);
		if (v >= 1) { /* Version 14: a row of before is one refusal. */
			int64_t times = 0;
			ck_assert_int_eq(store_audit_each(s, "u", "t", sum_times, &times), 0);
			ck_assert_int_eq(times, 1);
		}
		if (v >= 4)
			ck_assert_int_eq(store_journal_each(s, "u", "t", 0, 2, count_event,
							    &events),
					 0);
		if (v >= 3 && v < 7) { /* nothing was presented: it could not be */
			struct store_run run;
			ck_assert_int_eq(store_run_get(s, 1, &run), 0);
			ck_assert_str_eq(
				run.receipt,
				"{\"presented\":0,\"paths\":[],\"by_tool\":{},"
				"\"verification\":{\"source\":\"outputs_changed\",\"requirement\":"
				"\"present_files_matches_produced_output\"},\"produced_paths\":"
				"[\"/mnt/user-data/outputs/r.md\"],\"presented_paths\":[],"
				"\"matched_paths\":[],\"stage\":\"not_started\",\"satisfied\":false}");
			/* Version 8: an agent's run, undoing none, its pre-images kept. */
			ck_assert_int_eq(run.kind, RUN_AGENT);
			ck_assert_int_eq(run.undoes, 0);
			ck_assert(!run.kept);
			/* Version 9: what it holds not measured yet. */
			ck_assert_int_eq(run.held_bytes, -1);
			/* Version 10: no undo of before it counts as whole. */
			ck_assert(!run.clean);
			store_run_free(&run);
			const char *p[] = { "/mnt/user-data/outputs/r.md" };
			ck_assert_int_eq(store_present(s, 1, "present_files", p, 1, 3), -EALREADY);
		}
		store_close(s);
	}
	ck_assert_int_eq(events, STORE_SCHEMA_VERSION - 4);
}
END_TEST

Suite *suite_unit_snapshot(void)
{
	Suite *s = suite_create("unit_snapshot");
	TCase *tc = tcase_create("snapshot");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_snapshot_sensitive_names_on_any_component);
	tcase_add_test(tc, test_snapshot_sensitive_names_beyond_the_reference);
	tcase_add_test(tc, test_secrets_each_kind_and_its_near_miss);
	tcase_add_test(tc, test_snapshot_credentials_in_the_content_are_sensitive);
	tcase_add_test(tc, test_snapshot_binary_by_name);
	tcase_add_test(tc, test_snapshot_text_or_binary_by_content);
	tcase_add_test(tc, test_snapshot_walk_rules);
	tcase_add_test(tc, test_snapshot_text_decodes_whole);
	tcase_add_test(tc, test_snapshot_limit_truncates_and_skips_later_roots);
	tcase_add_test(tc, test_snapshot_a_file_vanishing_mid_scan_is_left_out);
	tcase_add_test(tc, test_snapshot_round_trips_through_the_store);
	tcase_add_test(tc, test_snapshot_reads_again_only_what_changed_since_a_known_one);
	tcase_add_test(tc, test_snapshot_kept_as_its_differences_from_a_base);
	tcase_add_test(tc, test_store_migrates_from_every_earlier_version);
	suite_add_tcase(s, tc);
	return s;
}
