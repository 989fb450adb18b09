// frs-mcp for OpenCode: records each session into FRS from OpenCode's own store, and after a
// compaction gives the model a digest of everything before it, whose aliases return any
// original (get_alias). Printed by `frs-mcp hook --print-config opencode`; put it in
// ~/.config/opencode/plugins/ (or .opencode/plugins/ in a project).
import { spawn } from "node:child_process";

const FRS = ["frs-mcp"]; // frs-mcp's absolute path and its --db, as printed
const TOKENS = [];
const TIMEOUT_MS = 30000;

// Runs `frs-mcp hook opencode EVENT` with the session's id on stdin; its stdout, or "" when
// anything went wrong (frs-mcp says what on its stderr, which goes to OpenCode's log).
function frs(event, sessionID, client) {
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    let child;
    try {
      child = spawn(FRS[0], [...FRS.slice(1), "hook", "opencode", event, ...TOKENS], {
        stdio: ["pipe", "pipe", "pipe"],
        timeout: TIMEOUT_MS,
      });
    } catch (error) {
      resolve("");
      return;
    }
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    child.on("error", () => resolve(""));
    child.on("close", () => {
      if (err.trim() && client?.app?.log) {
        client.app
          .log({ body: { service: "frs-mcp", level: "warn", message: err.trim() } })
          .catch(() => {});
      }
      resolve(out.trim());
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ session_id: sessionID }));
  });
}

export const FrsMcp = async ({ client }) => {
  // Per session: the digest its requests carry since its last compaction ("" for none).
  const digests = new Map();
  return {
    event: async ({ event }) => {
      if (event.type === "session.idle" && event.properties?.sessionID) {
        await frs("idle", event.properties.sessionID, client);
      }
    },
    "experimental.session.compacting": async (input, output) => {
      const digest = await frs("compacting", input.sessionID, client);
      digests.set(input.sessionID, digest);
      if (digest) output.context.push(digest);
    },
    "experimental.chat.system.transform": async (input, output) => {
      if (!input.sessionID) return;
      if (!digests.has(input.sessionID)) {
        digests.set(input.sessionID, await frs("system", input.sessionID, client));
      }
      const digest = digests.get(input.sessionID);
      if (digest) output.system.push(digest);
    },
  };
};
