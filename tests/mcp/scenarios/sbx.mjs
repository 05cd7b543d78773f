// sbx.mjs - scenarios for sbx mcp (issue 38): the reference's tools over
// one thread's view and sandbox. --root is the virtual directory they
// work in (default /mnt/user-data/workspace). The C side plants, in the
// thread's workspace on the host, escape -> /etc/passwd and escdir -> /etc,
// and unread.txt ("host\n", which no session has read), and checks on the
// host what the tools wrote.
import assert from "node:assert/strict";
import { text } from "../lib/client.mjs";

// server-filesystem's tools: what sbx mcp --profile filesystem lists.
export const SBXFS_TOOLS = [
	"create_directory", "directory_tree", "edit_file", "get_file_info", "list_allowed_directories",
	"list_directory", "list_directory_with_sizes", "move_file", "read_file", "read_media_file",
	"read_multiple_files", "read_text_file", "search_files", "write_file",
];

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
	"sbxfs-tools": {
		about: "--profile filesystem: tools/list has server-filesystem's tools and no others",
		async run(t) {
			const s = await t.connect();
			await t.group("tools/list", async () => {
				const tools = await s.tools();
				const names = tools.map((x) => x.name).sort();
				assert.deepEqual(names, SBXFS_TOOLS);
				for (const x of tools) {
					assert.equal(x.inputSchema?.type, "object", `${x.name}: inputSchema`);
					// read_media_file returns content blocks; the others text.
					assert.equal(x.outputSchema?.properties?.content?.type,
						x.name === "read_media_file" ? "array" : "string", `${x.name}: outputSchema`);
					assert.equal(x.annotations?.openWorldHint, false, `${x.name}: openWorldHint`);
				}
				return names.join(",");
			});
		},
	},
	"sbxfs-files": {
		about: "--profile filesystem: write, read (head/tail), edit (dry run, gate), move, tree, search, list",
		async run(t) {
			const s = await t.connect();
			const w = ws(t);
			await s.tools(); // the SDK checks structuredContent against each outputSchema from now on
			const okc = async (name, args) => {
				const r = await s.call(name, args);
				assert.equal(r.isError ?? false, false, `${name} failed: ${text(r)}`);
				assert.deepEqual(r.structuredContent, { content: text(r) }, `${name}: structuredContent`);
				return text(r);
			};
			await t.group("create_directory", async () => okc("create_directory", { path: `${w}/fsp/deep/er` }));
			await t.group("write_file", async () => okc("write_file", { path: `${w}/fsp/a.txt`, content: "one\ntwo\nthree\n" }));
			await t.group("read_text_file", async () => {
				const got = await okc("read_text_file", { path: `${w}/fsp/a.txt` });
				assert.equal(got, "one\ntwo\nthree\n");
				return JSON.stringify(got);
			});
			await t.group("head 2, tail 2", async () => {
				const h = await okc("read_text_file", { path: "fsp/a.txt", head: 2 });
				const tl = await okc("read_text_file", { path: "fsp/a.txt", tail: 2 });
				assert.equal(h, "one\ntwo");
				assert.equal(tl, "three\n");
				return `${JSON.stringify(h)} ${JSON.stringify(tl)}`;
			});
			await t.group("edit_file dryRun", async () => {
				const d = await okc("edit_file", { path: `${w}/fsp/a.txt`, edits: [{ oldText: "two", newText: "TWO" }], dryRun: true });
				assert.match(d, /^```diff\nIndex: \/mnt\/user-data\/workspace\/fsp\/a.txt\n=+\n--- \S+\toriginal\n\+\+\+ \S+\tmodified\n@@ -1,3 \+1,3 @@\n one\n-two\n\+TWO\n three\n```\n\n$/);
				return JSON.stringify(d.split("\n").filter((l) => /^[-+][^-+]/.test(l)));
			});
			await t.group("edit_file", async () => {
				await okc("read_text_file", { path: `${w}/fsp/a.txt` }); // the gate: read before write
				const d = await okc("edit_file", { path: `${w}/fsp/a.txt`, edits: [{ oldText: "three", newText: "3" }] });
				assert.match(d, /\n-three\n\+3\n/);
				return "-three +3";
			});
			await t.group("edit_file unread", async () => {
				const r = await s.call("edit_file", { path: `${w}/unread.txt`, edits: [{ oldText: "host", newText: "agent" }] });
				assert.equal(r.isError, true, `not refused: ${text(r)}`);
				assert.match(text(r), /blocked/);
				return firstLine(text(r));
			});
			await t.group("edit_file no match", async () => {
				const r = await s.call("edit_file", { path: `${w}/fsp/a.txt`, edits: [{ oldText: "nowhere", newText: "x" }], dryRun: true });
				assert.equal(r.isError, true);
				assert.equal(text(r), "Could not find exact match for edit:\nnowhere");
				return JSON.stringify(text(r));
			});
			await t.group("move_file", async () => okc("move_file", { source: `${w}/fsp/a.txt`, destination: `${w}/fsp/b.txt` }));
			await t.group("move_file onto an existing file", async () => {
				await okc("write_file", { path: `${w}/fsp/c.txt`, content: "c\n" });
				const r = await s.call("move_file", { source: `${w}/fsp/c.txt`, destination: `${w}/fsp/b.txt` });
				assert.equal(r.isError, true, `not refused: ${text(r)}`);
				return text(r);
			});
			await t.group("directory_tree", async () => {
				const tree = JSON.parse(await okc("directory_tree", { path: `${w}/fsp`, excludePatterns: ["c.txt"] }));
				assert.deepEqual(tree, [
					{ name: "b.txt", type: "file" },
					{ name: "deep", type: "directory", children: [{ name: "er", type: "directory", children: [] }] },
				]);
				return JSON.stringify(tree);
			});
			await t.group("search_files", async () => {
				const got = await okc("search_files", { path: `${w}/fsp`, pattern: "**/*.txt" });
				assert.equal(got, `${w}/fsp/b.txt\n${w}/fsp/c.txt`);
				return got.replaceAll(w, "WS").replace("\n", " ");
			});
			await t.group("list_directory", async () => {
				const got = await okc("list_directory", { path: `${w}/fsp` });
				assert.equal(got, "[FILE] b.txt\n[FILE] c.txt\n[DIR] deep");
				return JSON.stringify(got);
			});
			await t.group("list_directory_with_sizes", async () => {
				const got = await okc("list_directory_with_sizes", { path: `${w}/fsp`, sortBy: "name" });
				assert.equal(got, `[FILE] ${"b.txt".padEnd(30)} ${"10 B".padStart(10)}\n` +
					`[FILE] ${"c.txt".padEnd(30)} ${"2 B".padStart(10)}\n[DIR] ${"deep".padEnd(30)} \n\n` +
					"Total: 2 files, 1 directories\nCombined size: 12 B");
				return got.split("\n").slice(-2).join(", ");
			});
			await t.group("read_multiple_files", async () => {
				const got = await okc("read_multiple_files", { paths: [`${w}/fsp/c.txt`, `${w}/fsp/none`] });
				assert.equal(got, `${w}/fsp/c.txt:\nc\n\n\n---\n${w}/fsp/none: Error - ENOENT: no such file or directory, open '${w}/fsp/none'`);
				return JSON.stringify(got.replaceAll(w, "WS"));
			});
			await t.group("list_allowed_directories", async () => {
				const got = await okc("list_allowed_directories", {});
				assert.match(got, /^Allowed directories:\n\/mnt\/user-data\/workspace\n/);
				return JSON.stringify(got);
			});
			await t.group("read_media_file", async () => {
				await okc("write_file", { path: `${w}/media/m.png`, content: "not really a png" });
				await okc("write_file", { path: `${w}/media/notes.bin`, content: "blob\n" });
				const img = await s.call("read_media_file", { path: `${w}/media/m.png` });
				assert.equal(img.isError ?? false, false, text(img));
				assert.deepEqual(img.content, [{ type: "image", mimeType: "image/png",
					data: Buffer.from("not really a png").toString("base64") }]);
				assert.deepEqual(img.structuredContent, { content: img.content });
				const blob = await s.call("read_media_file", { path: "media/notes.bin" });
				assert.equal(blob.content[0].type, "resource");
				assert.equal(blob.content[0].resource.mimeType, "application/octet-stream");
				assert.equal(blob.content[0].resource.uri, `file://${w}/media/notes.bin`);
				assert.equal(Buffer.from(blob.content[0].resource.blob, "base64").toString(), "blob\n");
				const out = await s.call("read_media_file", { path: `${w}/escape` });
				assert.equal(out.isError, true, `not refused: ${JSON.stringify(out).slice(0, 200)}`);
				return `image/png, resource, ${firstLine(text(out))}`;
			});
			await t.group("get_file_info", async () => {
				const got = await okc("get_file_info", { path: `${w}/fsp/b.txt` });
				assert.match(got, /^size: 10\n/m);
				assert.match(got, /^isFile: true$/m);
				return got.split("\n")[0];
			});
		},
	},
	"sbxfs-confine": {
		about: "--profile filesystem: paths outside the allowed directories, .. and symlinks out: tool errors",
		async run(t) {
			const s = await t.connect();
			const w = ws(t);
			const refusedc = async (name, args) => {
				const r = await s.call(name, args);
				assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} was not refused: ${text(r).slice(0, 200)}`);
				assert.doesNotMatch(text(r), /root:x?:0:0/);
				return text(r);
			};
			await t.group("read /etc/passwd", async () => {
				const m = await refusedc("read_text_file", { path: "/etc/passwd" });
				assert.match(m, /^Access denied - path outside allowed directories: \/etc\/passwd not in /);
				return firstLine(m);
			});
			await t.group("read WS/../../../etc/passwd", async () =>
				firstLine(await refusedc("read_text_file", { path: `${w}/../../../etc/passwd` })));
			await t.group("read WS/escape", async () => firstLine(await refusedc("read_text_file", { path: `${w}/escape` })));
			await t.group("write WS/escdir/sbx-mcp-test", async () =>
				firstLine(await refusedc("write_file", { path: `${w}/escdir/sbx-mcp-test`, content: "no" })));
			await t.group("move WS/escape out", async () =>
				firstLine(await refusedc("move_file", { source: `${w}/escdir/hostname`, destination: `${w}/stolen` })));
		},
	},
};
