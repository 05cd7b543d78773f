// common.mjs - scenarios for any MCP server.
import assert from "node:assert/strict";

// The protocol versions issue 38 asks a server to negotiate.
export const PROTOCOL_VERSIONS = ["2025-06-18", "2025-11-25"];

export const scenarios = {
	initialize: {
		about: "initialize asking for each of 2025-06-18 and 2025-11-25: the server answers with the same",
		async run(t) {
			for (const v of PROTOCOL_VERSIONS)
				await t.group(`initialize ${v}`, async () => {
					const s = await t.connect({ protocolVersion: v });
					assert.equal(s.negotiated, v, `asked for ${v}, the server answered ${s.negotiated}`);
					assert.ok(s.serverInfo?.name, "serverInfo has a name");
					assert.ok(s.client.getServerCapabilities()?.tools, "the server declares tools");
					await s.close();
					return `negotiated ${s.negotiated}, server ${s.serverInfo.name} ${s.serverInfo.version}`;
				});
		},
	},
};
