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
