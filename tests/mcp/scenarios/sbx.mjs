// sbx.mjs - scenarios for sbx mcp (issue 38): the reference's tools over
// one thread's view and sandbox. --root is the virtual directory they
// work in (default /mnt/user-data/workspace). The C side plants, in the
// thread's workspace on the host, escape -> /etc/passwd and escdir -> /etc,
// and checks on the host what the tools wrote.
import assert from "node:assert/strict";
import { text } from "../lib/client.mjs";

export const SBX_TOOLS = [
	"bash", "changes", "glob", "grep", "ls", "present_files", "read_file", "str_replace", "undo",
	"write_file",
];
// A command line no other test runs: pgrep finds the sleep by it, and the
// pattern [.] does not match the pattern itself.
const SLEEP = "sleep 31.4159";
const SLEEP_RE = "sleep 31[.]4159";

const ws = (t) => t.root ?? "/mnt/user-data/workspace";

// tools/call NAME with ARGS on session S; a tool whose schema has the
// reference's "description" argument (why the agent calls it) gets one.
async function call(s, name, args, req) {
	const tool = (await s.tools()).find((x) => x.name === name);
	assert.ok(tool, `no tool ${name}`);
	if (tool.inputSchema?.properties?.description && args.description === undefined)
		args = { description: "sbxfs test", ...args };
	return s.call(name, args, req);
}

// The text of a result that succeeded.
async function ok(s, name, args, req) {
	const r = await call(s, name, args, req);
	assert.equal(r.isError ?? false, false, `${name} failed: ${text(r)}`);
	return text(r);
}

// A result that is a tool error (isError), not a protocol error: its text.
async function refused(s, name, args) {
	const r = await call(s, name, args);
	assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} was not refused: ${text(r).slice(0, 200)}`);
	return text(r);
}

const firstLine = (s) => s.split("\n")[0].slice(0, 100);

export const scenarios = {
	"sbx-tools": {
		about: "tools/list has the reference's tools, each with an input schema and annotations",
		async run(t) {
			const s = await t.connect();
			await t.group("tools/list", async () => {
				const tools = await s.tools();
				const names = tools.map((x) => x.name);
				for (const n of SBX_TOOLS) assert.ok(names.includes(n), `no tool ${n} in ${names.join(",")}`);
				for (const x of tools) {
					assert.equal(x.inputSchema?.type, "object", `${x.name}: inputSchema`);
					assert.equal(typeof x.annotations, "object", `${x.name}: annotations`);
					assert.equal(x.annotations.openWorldHint, false, `${x.name}: openWorldHint`);
					for (const h of ["readOnlyHint", "destructiveHint", "idempotentHint"])
						assert.equal(typeof (x.annotations[h] ?? false), "boolean", `${x.name}: ${h}`);
				}
				return SBX_TOOLS.join(",");
			});
		},
	},
	"sbx-files": {
		about: "write_file then read_file under the workspace",
		async run(t) {
			const s = await t.connect();
			const p = `${ws(t)}/mcp-round.txt`;
			await t.group("write_file", async () => firstLine(await ok(s, "write_file", { path: p, content: "one\ntwo\n" })));
			await t.group("read_file", async () => {
				const got = await ok(s, "read_file", { path: p });
				assert.match(got, /one\ntwo/);
				return JSON.stringify(got);
			});
		},
	},
	"sbx-confine": {
		about: "paths outside the virtual roots, .. and symlinks out: tool errors, nothing read or written",
		async run(t) {
			const s = await t.connect();
			const w = ws(t);
			await t.group("read /etc/passwd", async () => {
				const m = await refused(s, "read_file", { path: "/etc/passwd" });
				assert.match(m, /Only paths under/);
				return firstLine(m);
			});
			await t.group("write /tmp/sbx-mcp-outside", async () => {
				const m = await refused(s, "write_file", { path: "/tmp/sbx-mcp-outside", content: "no" });
				assert.match(m, /Only paths under/);
				return firstLine(m);
			});
			for (const p of [`${w}/../../../etc/passwd`, `${w}/escape`, `${w}/escdir/passwd`])
				await t.group(`read ${p.replace(w, "WS")}`, async () => {
					const m = await refused(s, "read_file", { path: p });
					assert.doesNotMatch(m, /root:x?:0:0/);
					return firstLine(m);
				});
			await t.group("write WS/escdir/sbx-mcp-test", async () =>
				firstLine(await refused(s, "write_file", { path: `${w}/escdir/sbx-mcp-test`, content: "no" })));
		},
	},
	"sbx-bash": {
		about: "bash echo hi",
		async run(t) {
			const s = await t.connect();
			await t.group("bash echo hi", async () => {
				const out = await ok(s, "bash", { command: "echo hi" });
				assert.match(out, /^hi$/m);
				return JSON.stringify(out);
			});
		},
	},
	"sbx-session": {
		about: "bash keeps its shell within a session: cd and export carry over",
		async run(t) {
			const s = await t.connect();
			await t.group("cd /tmp && export X=1", async () => JSON.stringify(await ok(s, "bash", { command: "cd /tmp && export X=1" })));
			await t.group("pwd; echo $X", async () => {
				const out = await ok(s, "bash", { command: "pwd; echo $X" });
				assert.match(out, /^\/tmp$/m);
				assert.match(out, /^1$/m);
				return JSON.stringify(out);
			});
		},
	},
	"sbx-cancel": {
		about: `notifications/cancelled of a running bash ${SLEEP}: the sleep is killed, the session goes on`,
		async run(t) {
			const s = await t.connect();
			await s.tools();
			const ac = new AbortController();
			let pending;
			await t.group("sleep started", async () => {
				assert.deepEqual(t.pgrep(SLEEP_RE), [], `a ${SLEEP} runs already`);
				pending = call(s, "bash", { command: SLEEP }, { signal: ac.signal, timeout: 60000 });
				pending.catch(() => {}); // awaited below
				await t.until(`${SLEEP} runs`, () => t.pgrep(SLEEP_RE).length > 0);
				return `pid ${t.pgrep(SLEEP_RE).join(" ")}`;
			});
			await t.group("cancelled", async () => {
				const t0 = Date.now();
				ac.abort("sbxfs test cancels");
				await assert.rejects(pending, /sbxfs test cancels/);
				await t.until(`${SLEEP} is gone`, () => t.pgrep(SLEEP_RE).length === 0, 5000);
				return `the sleep gone ${Date.now() - t0} ms after the cancel`;
			});
			await t.group("session goes on", async () => {
				const out = await ok(s, "bash", { command: "echo after" }, { timeout: 10000 });
				assert.match(out, /^after$/m);
				return JSON.stringify(out);
			});
		},
	},
	"sbx-concurrent": {
		about: "two clients of one thread: a shell each, one view, neither waits for the other",
		async run(t) {
			const [a, b] = await Promise.all([t.connect(), t.connect()]);
			const w = ws(t);
			await t.group("a shell each", async () => {
				await Promise.all([ok(a, "bash", { command: "export X=a" }), ok(b, "bash", { command: "export X=b" })]);
				const [xa, xb] = await Promise.all([ok(a, "bash", { command: "echo $X" }), ok(b, "bash", { command: "echo $X" })]);
				assert.match(xa, /^a$/m);
				assert.match(xb, /^b$/m);
				return `a sees ${xa.trim()}, b sees ${xb.trim()}`;
			});
			await t.group("one view", async () => {
				await ok(a, "write_file", { path: `${w}/mcp-shared.txt`, content: "from a\n" });
				const got = await ok(b, "read_file", { path: `${w}/mcp-shared.txt` });
				assert.match(got, /from a/);
				return "b reads what a wrote";
			});
			await t.group("at once", async () => {
				// a's command ends only once b's write lands: b must not wait for a.
				const waiting = ok(a, "bash", {
					command: `i=0; while [ ! -e ${w}/mcp-go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; cat ${w}/mcp-go`,
				});
				await ok(b, "write_file", { path: `${w}/mcp-go`, content: "released\n" });
				assert.match(await waiting, /^released$/m);
				return "a's command saw b's write while it ran";
			});
		},
	},
};
