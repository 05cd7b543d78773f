# gensources.sh - sourced by bench/run-bench and bench/anchor-bench: the
# C build workload's sources, the same for both.
# shellcheck shell=bash

gen_sources() { # DIR N: N small C modules, main.c and a Makefile
	local d=$1 n=$2 i j
	mkdir "$d" || return 1
	for ((i = 0; i < n; i++)); do
		{
			printf '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n'
			for ((j = 0; j < 12; j++)); do
				printf 'static unsigned long f%d(unsigned long x)\n{\n' $j
				printf '\tunsigned long a[64];\n\tchar buf[64];\n\n'
				printf '\tfor (int i = 0; i < 64; i++)\n\t\ta[i] = x * %d + (unsigned long)i;\n' $((j + i + 3))
				printf '\tfor (int r = 0; r < %d; r++)\n\t\tfor (int i = 1; i < 64; i++)\n' $((j + 2))
				printf '\t\t\ta[i] ^= (a[i - 1] >> (r %% 7)) + (unsigned long)r;\n'
				printf '\tsnprintf(buf, sizeof(buf), "%%lu", a[63]);\n'
				printf '\treturn a[%d] + strlen(buf);\n}\n\n' $((j % 64))
			done
			printf 'unsigned long m%d(unsigned long x)\n{\n\treturn x' $i
			for ((j = 0; j < 12; j++)); do printf ' + f%d(x)' $j; done
			printf ';\n}\n'
		} >"$d/m$i.c" || return 1
	done
	{
		printf '#include <stdio.h>\n\n'
		for ((i = 0; i < n; i++)); do printf 'unsigned long m%d(unsigned long);\n' $i; done
		printf '\nint main(void)\n{\n\tunsigned long s = 0;\n\n'
		for ((i = 0; i < n; i++)); do printf '\ts += m%d(%d);\n' $i $i; done
		printf '\tprintf("%%lu\\n", s);\n\treturn 0;\n}\n'
	} >"$d/main.c" || return 1
	printf 'CFLAGS = -O2\nOBJS = $(patsubst %%.c,%%.o,$(wildcard *.c))\n\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n' \
		>"$d/Makefile"
}

gen_pytests() { # DIR N: a Python package of N modules, their unittest suite and fixtures
	local d=$1 n=$2 i j
	mkdir "$d" "$d/pkg" "$d/tests" "$d/fixtures" "$d/out" || return 1
	: >"$d/pkg/__init__.py" && : >"$d/tests/__init__.py" || return 1
	for ((i = 0; i < n; i++)); do
		{
			printf '"""Module %d of the generated package."""\n\n' $i
			for ((j = 0; j < 5; j++)); do
				printf 'def f%d(xs):\n' $j
				printf '    """Sorted running sums of xs, scaled by %d, and their digits."""\n' $((i + j + 1))
				printf '    total, out = 0, []\n    for x in xs:\n'
				printf '        total += x * %d\n        out.append((total %% 1000003, str(total)[-4:]))\n' $((i + j + 1))
				printf '    return sorted(out)\n\n\n'
			done
		} >"$d/pkg/m$i.py" || return 1
		{
			printf 'import json\nimport os\nimport unittest\n\nfrom pkg import m%d\n\n' $i
			printf 'HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n\n\n'
			printf 'class TestM%d(unittest.TestCase):\n' $i
			for ((j = 0; j < 5; j++)); do
				printf '    def test_f%d(self):\n' $j
				printf '        with open(os.path.join(HERE, "fixtures", "m%d_%d.json")) as f:\n' $i $j
				printf '            xs = json.load(f)\n'
				printf '        got = [list(p) for p in m%d.f%d(xs)]\n' $i $j
				printf '        out = os.path.join(HERE, "out", "m%d_%d.json")\n' $i $j
				printf '        with open(out, "w") as f:\n            json.dump(got, f)\n'
				printf '        with open(out) as f:\n            self.assertEqual(json.load(f), got)\n'
				printf '        self.assertEqual(len(got), len(xs))\n\n'
			done
		} >"$d/tests/test_m$i.py" || return 1
		for ((j = 0; j < 5; j++)); do
			local k xs=
			for ((k = 0; k < 300; k++)); do xs="$xs${xs:+, }$(((i * 7919 + j * 104729 + k * 31) % 10007))"; done
			printf '[%s]\n' "$xs" >"$d/fixtures/m${i}_$j.json" || return 1
		done
	done
}
