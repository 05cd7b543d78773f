#!/usr/bin/env node
// drive.mjs - runs one named scenario against an MCP server with the
// official TypeScript SDK client (tests/integ/test_mcp.c runs it; so can
// a person).
//
//   node tests/mcp/drive.mjs [OPTIONS] SCENARIO -- SERVER_CMD...   (stdio)
//   node tests/mcp/drive.mjs --transport http --url URL [--token-file F] SCENARIO
//   node tests/mcp/drive.mjs --list
//
// Options: --root DIR (where the scenario works: server-filesystem's
// allowed directory for fs-*, a virtual path for sbx-*, default
// /mnt/user-data/workspace), --timeout S (each request, default 20),
// --deadline S (the whole scenario, default 120). The bearer token for
// http is the first line of --token-file, else $SBX_MCP_TOKEN.
//
// A scenario is a sequence of assertion groups; each prints one line,
// "ok GROUP: WHAT WAS SEEN". The first failure prints "FAILED GROUP:" and
// the assertion's message, and the exit status is 1 (2: bad usage). The
// last line on success is "drive: SCENARIO: N groups ok".
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "./lib/client.mjs";
import { scenarios as fs } from "./scenarios/filesystem.mjs";
import { scenarios as sbx } from "./scenarios/sbx.mjs";
import { scenarios as common } from "./scenarios/common.mjs";

const SCENARIOS = { ...common, ...fs, ...sbx };

function usage(msg) {
	if (msg) console.error(`drive: ${msg}`);
	console.error(
		"usage: node tests/mcp/drive.mjs [--root DIR] [--timeout S] [--deadline S] SCENARIO -- SERVER_CMD...\n" +
			"       node tests/mcp/drive.mjs --transport http --url URL [--token-file FILE] SCENARIO\n" +
			"       node tests/mcp/drive.mjs --list",
	);
	process.exit(2);
}

function parse(argv) {
	const o = { transport: "stdio", root: undefined, timeout: 20, deadline: 120, server: [] };
	const sep = argv.indexOf("--");
	const own = sep < 0 ? argv : argv.slice(0, sep);
	if (sep >= 0) o.server = argv.slice(sep + 1);
	for (let i = 0; i < own.length; i++) {
		const a = own[i];
		const val = () => (++i < own.length ? own[i] : usage(`${a} needs a value`));
		if (a === "--list") o.list = true;
		else if (a === "--transport") o.transport = val();
		else if (a === "--url") o.url = val();
		else if (a === "--token-file") o.tokenFile = val();
		else if (a === "--root") o.root = val();
		else if (a === "--timeout") o.timeout = Number(val());
		else if (a === "--deadline") o.deadline = Number(val());
		else if (a.startsWith("-")) usage(`unknown option ${a}`);
		else if (o.scenario) usage(`one scenario at a time (${o.scenario}, ${a})`);
		else o.scenario = a;
	}
	return o;
}

const o = parse(process.argv.slice(2));
if (o.list) {
	for (const [name, s] of Object.entries(SCENARIOS)) console.log(`${name}\t${s.about}`);
	process.exit(0);
}
if (!o.scenario) usage("no scenario");
const scenario = SCENARIOS[o.scenario];
if (!scenario) usage(`no scenario ${o.scenario} (--list names them)`);
let target;
if (o.transport === "stdio") {
	if (!o.server.length) usage("stdio needs the server's command line after --");
	target = { transport: "stdio", command: o.server[0], args: o.server.slice(1) };
} else if (o.transport === "http") {
	if (!o.url) usage("http needs --url");
	const token = o.tokenFile
		? readFileSync(o.tokenFile, "utf8").split("\n")[0]
		: process.env.SBX_MCP_TOKEN;
	target = { transport: "http", url: o.url, token };
} else usage(`no transport ${o.transport} (stdio, http)`);

// What a scenario gets: the options, connect() to the server (each call
// a new session: a new process over stdio), group() to run and report an
// assertion group, and helpers to wait for a condition and look for
// processes.
const sessions = new Set();
let current = "connect";
let groups = 0;
const t = {
	root: o.root,
	transport: o.transport,
	async connect(opts = {}) {
		const s = await connect(target, { timeoutMs: o.timeout * 1000, ...opts });
		sessions.add(s);
		const close = s.close;
		s.close = async () => {
			sessions.delete(s);
			await close();
		};
		return s;
	},
	// Runs FN (async); it returns what to print after "ok NAME: ".
	async group(name, fn) {
		current = name;
		const detail = await fn();
		groups++;
		console.log(`ok ${name}${detail === undefined ? "" : `: ${detail}`}`);
	},
	// Until FN() is true, polling every 50 ms; throws after MS.
	async until(what, fn, ms = 10000) {
		const end = Date.now() + ms;
		while (!(await fn())) {
			if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
			await new Promise((r) => setTimeout(r, 50));
		}
	},
	// The pids of the processes whose command line matches the extended
	// regular expression PATTERN (pgrep -f; ours is not among them).
	pgrep(pattern) {
		try {
			return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).split("\n").filter(Boolean);
		} catch (e) {
			if (e.status === 1) return [];
			throw e;
		}
	},
};

// Closes what the scenario left open, each within 5 s (a server that
// hangs is the C side's to kill and report).
async function closeAll() {
	await Promise.race([
		Promise.allSettled([...sessions].map((s) => s.close())),
		new Promise((r) => setTimeout(r, 5000).unref()),
	]);
}

const deadline = setTimeout(() => {
	console.log(`FAILED ${current}: the scenario did not end within ${o.deadline} s`);
	process.exit(1);
}, o.deadline * 1000);

try {
	await scenario.run(t);
} catch (e) {
	console.log(`FAILED ${current}: ${e?.stack ?? e}`);
	for (const s of sessions)
		if (s.stderrTail.length) console.log(`server stderr, last lines:\n${s.stderrTail.join("\n")}`);
	await closeAll();
	process.exit(1);
}
await closeAll();
clearTimeout(deadline);
console.log(`drive: ${o.scenario}: ok (${groups} groups)`);
process.exit(0);
