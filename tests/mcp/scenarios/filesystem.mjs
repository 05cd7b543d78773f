// filesystem.mjs - scenarios against @modelcontextprotocol/server-filesystem
// (the reference server, the baseline issue 38 compares sbx mcp with).
// --root is the server's allowed directory, as the C side laid it out:
// hello.txt ("alpha beta\n"), sub/, escape -> /etc/passwd, escdir -> /etc.
import assert from "node:assert/strict";
import { text } from "../lib/client.mjs";

const TOOLS = [
	"create_directory", "directory_tree", "edit_file", "get_file_info", "list_allowed_directories",
	"list_directory", "list_directory_with_sizes", "move_file", "read_file", "read_media_file",
	"read_multiple_files", "read_text_file", "search_files", "write_file",
];

function root(t) {
	assert.ok(t.root?.startsWith("/"), "fs-* scenarios need --root DIR, the server's allowed directory");
	return t.root;
}

// A tool result that succeeded: no isError, and its text.
function ok(r) {
	assert.equal(r.isError ?? false, false, `tool error: ${text(r)}`);
	return text(r);
}

export const scenarios = {
	"fs-tools": {
		about: "tools/list: every tool with an input schema and annotations, openWorldHint false",
		async run(t) {
			const s = await t.connect();
			await t.group("tools/list", async () => {
				const tools = await s.tools();
				const names = tools.map((x) => x.name).sort();
				assert.deepEqual(names, TOOLS);
				for (const x of tools) {
					assert.equal(x.inputSchema?.type, "object", `${x.name}: inputSchema`);
					assert.equal(x.annotations?.openWorldHint, false, `${x.name}: openWorldHint`);
				}
				return names.join(",");
			});
		},
	},
	"fs-files": {
		about: "read_text_file, write_file, edit_file (its diff), the file read back",
		async run(t) {
			const dir = root(t);
			const s = await t.connect();
			await s.tools(); // the SDK checks structuredContent against each outputSchema from now on
			await t.group("read_text_file", async () => {
				const r = await s.call("read_text_file", { path: `${dir}/hello.txt` });
				assert.equal(ok(r), "alpha beta\n");
				assert.deepEqual(r.structuredContent, { content: "alpha beta\n" });
				return JSON.stringify(text(r));
			});
			await t.group("write_file", async () => {
				const r = await s.call("write_file", { path: `${dir}/sub/new.txt`, content: "x\ny\n" });
				return ok(r);
			});
			await t.group("edit_file", async () => {
				const d = ok(await s.call("edit_file", {
					path: `${dir}/sub/new.txt`,
					edits: [{ oldText: "y", newText: "z" }],
				}));
				assert.match(d, /^-y$/m);
				assert.match(d, /^\+z$/m);
				return "diff -y +z";
			});
			await t.group("read back", async () => {
				const r = await s.call("read_text_file", { path: `${dir}/sub/new.txt` });
				assert.equal(ok(r), "x\nz\n");
				return JSON.stringify(text(r));
			});
		},
	},
	"fs-confine": {
		about: "paths outside the root, .. and symlinks out of it: tool errors (isError), not protocol errors",
		async run(t) {
			const dir = root(t);
			const s = await t.connect();
			const outside = ["/etc/passwd", `${dir}/../../etc/passwd`, `${dir}/escape`, `${dir}/escdir/passwd`];
			for (const p of outside)
				await t.group(`read ${p.replace(dir, "ROOT")}`, async () => {
					const r = await s.call("read_text_file", { path: p });
					assert.equal(r.isError, true, `read of ${p} succeeded: ${text(r).slice(0, 80)}`);
					assert.match(text(r), /Access denied/);
					return "isError: " + text(r).split(" - ")[0];
				});
			await t.group("write ROOT/escdir/sbx-mcp-test", async () => {
				const r = await s.call("write_file", { path: `${dir}/escdir/sbx-mcp-test`, content: "no" });
				assert.equal(r.isError, true, `write through escdir succeeded: ${text(r)}`);
				assert.match(text(r), /Access denied/);
				return "isError: " + text(r).split(" - ")[0];
			});
		},
	},
	"fs-concurrent": {
		about: "two clients (two servers) on one root at once: what one writes the other reads",
		async run(t) {
			const dir = root(t);
			const [a, b] = await Promise.all([t.connect(), t.connect()]);
			await t.group("two sessions", async () => {
				const n = 20;
				const writes = [];
				for (let i = 0; i < n; i++)
					writes.push((i % 2 ? a : b).call("write_file", { path: `${dir}/c${i}.txt`, content: `${i}\n` }));
				(await Promise.all(writes)).forEach(ok);
				const reads = [];
				for (let i = 0; i < n; i++)
					reads.push((i % 2 ? b : a).call("read_text_file", { path: `${dir}/c${i}.txt` }));
				const got = (await Promise.all(reads)).map(ok);
				assert.deepEqual(got, [...Array(n).keys()].map((i) => `${i}\n`));
				return `${n} files written by one, read by the other`;
			});
		},
	},
};
