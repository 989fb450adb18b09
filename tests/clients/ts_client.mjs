// Drives frs-mcp with the official TypeScript SDK client and prints what it saw as one JSON
// object on stdout; tests/clients/test_typescript_sdk.py makes the assertions.
//
//   node ts_client.mjs stdio COMMAND [ARGS...]
//   node ts_client.mjs sse|http URL [TOKEN]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [kind, target, ...rest] = process.argv.slice(2);

function transport() {
  if (kind === "stdio") {
    return new StdioClientTransport({ command: target, args: rest, stderr: "ignore" });
  }
  const token = rest[0];
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : {};
  if (kind === "sse") return new SSEClientTransport(new URL(target), { requestInit });
  if (kind === "http") return new StreamableHTTPClientTransport(new URL(target), { requestInit });
  throw new Error(`unknown transport ${kind}`);
}

const text = (result) =>
  result.content
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");

const client = new Client({ name: "frs-ts-sdk-check", version: "1.0.0" });
const report = {};
// notifications/resources/updated, in the order they came; `told` wakes whoever waits.
const updated = [];
let told = () => {};
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
  updated.push(notification.params.uri);
  told();
});
async function updatesUntil(count, ms) {
  const deadline = Date.now() + ms;
  while (updated.length < count && Date.now() < deadline) {
    await new Promise((resolve) => {
      told = resolve;
      setTimeout(resolve, 100);
    });
  }
  return [...updated];
}

try {
  await client.connect(transport());
  report.server = client.getServerVersion();
  report.resourcesCapability = client.getServerCapabilities().resources;

  const tools = await client.listTools();
  report.tools = tools.tools.map((t) => t.name).sort();

  const started = await client.callTool({
    name: "frs_session",
    arguments: { action: "start", title: `typescript over ${kind}` },
  });
  report.started = text(started);
  const sessionId = /session (\S+) "/.exec(report.started)[1];
  report.sessionId = sessionId;
  // Follow the thread (2025-11-25 resources/subscribe): the record and the squash below each
  // change it.
  await client.subscribeResource({ uri: `frs://sessions/${sessionId}/thread` });

  const messages = [
    { role: "user", content: "Why does test_sync fail one run in five?" },
    {
      role: "assistant",
      content: "Running it twenty times to see the failure rate and the message.",
      tool_calls: [{ id: "c1", name: "bash", arguments: { cmd: "pytest -x --count 20" } }],
    },
    {
      role: "tool",
      name: "bash",
      tool_call_id: "c1",
      content: "4 failed, 16 passed: AssertionError 3 != 4 in test_sync. ".repeat(8),
    },
    { role: "assistant", content: "The flush races the writer; fixing the lock order." },
  ];
  const recorded = await client.callTool({
    name: "frs_record",
    arguments: { session_id: sessionId, messages },
  });
  report.recorded = { isError: recorded.isError ?? false, structured: recorded.structuredContent };

  const view = await client.callTool({
    name: "frs_view_thread",
    arguments: { session_id: sessionId },
  });
  report.view = text(view);

  const squashed = await client.callTool({
    name: "frs_compress_range",
    arguments: {
      session_id: sessionId,
      from: 2,
      to: 3,
      summary: "Ran it 20x: 4 failures, 3 != 4.",
      expected_revision: recorded.structuredContent.revision,
    },
  });
  report.squashed = {
    isError: squashed.isError ?? false,
    structured: squashed.structuredContent,
    text: text(squashed),
  };

  report.updated = await updatesUntil(2, 20000);

  const resource = await client.readResource({ uri: `frs://sessions/${sessionId}/thread` });
  report.resource = resource.contents.map((c) => c.text).join("\n");

  const bad = await client.callTool({
    name: "frs_compress_range",
    arguments: { session_id: sessionId, from: 40, to: 50, summary: "nothing there" },
  });
  report.badRange = { isError: bad.isError ?? false, text: text(bad) };

  await client.close();
  process.stdout.write(JSON.stringify(report));
} catch (error) {
  process.stderr.write(`ts_client failed over ${kind}: ${error?.stack ?? error}\n`);
  process.stderr.write(`report so far: ${JSON.stringify(report)}\n`);
  process.exit(1);
}
