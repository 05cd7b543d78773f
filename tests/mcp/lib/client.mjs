// client.mjs - the official MCP TypeScript SDK client, connected to a
// server over stdio (the server's command line) or Streamable HTTP (a
// URL and a bearer token): what tests/mcp/drive.mjs and bench/mcp-bench
// share.
//
// connect(target, {protocolVersion}) returns a session: the SDK Client,
// the protocol version the server answered at initialize, call() and
// close(). A protocolVersion replaces the one the SDK asks for (always
// its latest) in the initialize request, so that a test can ask for an
// older version the server must accept.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export const CLIENT_INFO = { name: "sbxfs-tests", version: "0.1.0" };

// The text of a tool result's text blocks, joined by newlines.
export const text = (r) =>
	(r.content ?? [])
		.filter((c) => c.type === "text")
		.map((c) => c.text)
		.join("\n");

// The transport TARGET names: {transport: "stdio", command, args} or
// {transport: "http", url, token}. A stdio server gets our whole
// environment (the SDK passes only a few variables by default: the test
// decides what the server sees), and its stderr goes to STDERR_SINK, a
// line at a time.
function makeTransport(target, stderrSink) {
	if (target.transport === "http") {
		const headers = target.token ? { Authorization: `Bearer ${target.token}` } : {};
		return new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers } });
	}
	const t = new StdioClientTransport({
		command: target.command,
		args: target.args,
		env: process.env,
		stderr: "pipe",
	});
	let partial = "";
	t.stderr.on("data", (chunk) => {
		const lines = (partial + chunk.toString()).split("\n");
		partial = lines.pop();
		for (const l of lines) stderrSink(l);
	});
	t.stderr.on("end", () => partial && stderrSink(partial));
	return t;
}

// The transport INNER seen by the Client through a proxy that rewrites
// the initialize request's protocolVersion (when one is given) and
// keeps the initialize result in SEEN.
function tap(inner, protocolVersion, seen) {
	return new Proxy(inner, {
		get(target, prop) {
			if (prop === "send")
				return (msg, opts) => {
					if (msg.method === "initialize") {
						seen.initializeId = msg.id;
						if (protocolVersion)
							msg = { ...msg, params: { ...msg.params, protocolVersion } };
					}
					return target.send(msg, opts);
				};
			const v = Reflect.get(target, prop);
			return typeof v === "function" ? v.bind(target) : v;
		},
		set(target, prop, value) {
			if (prop === "onmessage" && typeof value === "function") {
				const handler = value;
				value = (msg, extra) => {
					if (msg.id !== undefined && msg.id === seen.initializeId && msg.result)
						seen.initialize = msg.result;
					handler(msg, extra);
				};
			}
			return Reflect.set(target, prop, value);
		},
	});
}

// Connects to TARGET. Options: protocolVersion (see above), timeoutMs
// (each request's, default 20 s), stderr (a function that takes each
// line the server writes to stderr; default: our stderr, prefixed),
// capabilities (the client's).
export async function connect(target, opts = {}) {
	const seen = {};
	const stderrTail = [];
	const sink =
		opts.stderr ??
		((line) => {
			stderrTail.push(line);
			if (stderrTail.length > 40) stderrTail.shift();
			process.stderr.write(`server: ${line}\n`);
		});
	const inner = makeTransport(target, sink);
	const client = new Client(CLIENT_INFO, { capabilities: opts.capabilities ?? {} });
	const timeout = opts.timeoutMs ?? 20000;
	await client.connect(tap(inner, opts.protocolVersion, seen), { timeout });
	let tools;
	const session = {
		client,
		transport: inner,
		negotiated: seen.initialize?.protocolVersion,
		serverInfo: client.getServerVersion(),
		stderrTail,
		// tools/list, once; later calls reuse it.
		async tools() {
			tools ??= (await client.listTools(undefined, { timeout })).tools;
			return tools;
		},
		// tools/call NAME with ARGS; REQ are the SDK's request options
		// (signal, timeout).
		call(name, args = {}, req = {}) {
			return client.callTool({ name, arguments: args }, undefined, { timeout, ...req });
		},
		close: () => client.close(),
	};
	return session;
}
