// The commands a project keeps, seen and sent by the official TypeScript client library
// (@agentclientprotocol/sdk). Run by cli/tests/suite/kept_files.rs with:
// node client.mjs GOLATO WORKDIR SCRIPT
// It prints one JSON line per check; any failure throws (exit code 1).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [golato, work, script] = process.argv.slice(2);

function check(what, ok, detail) {
  if (!ok) throw new Error(`${what}: ${JSON.stringify(detail)}`);
  console.log(JSON.stringify({ ok: what }));
}

const until = async (what, condition) => {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > 30000) throw new Error(`${what} never happened`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

const updates = [];
const child = spawn(golato, ["acp", "--script", script, "--trust", "--ephemeral"], {
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const app = acp
  .client({ name: "golato-commands-client" })
  .onNotification("session/update", ({ params }) => {
    updates.push(params);
  })
  .onRequest("session/request_permission", () => ({ outcome: { outcome: "cancelled" } }));
await app.connectWith(stream, async (cx) => {
  await cx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const { sessionId } = await cx.request("session/new", { cwd: work, mcpServers: [] });
  const offered = () =>
    updates.find((n) => n.sessionId === sessionId && n.update.sessionUpdate === "available_commands_update");
  await until("available_commands_update", offered);
  const commands = offered().update.availableCommands;
  const review = commands.find((c) => c.name === "review");
  check("the command with its description and hint", review && review.description === "Review a pull request" && review.input.hint === "[pr-number] [priority]", commands);
  check("the namespaced command", commands.some((c) => c.name === "frontend:check"), commands);
  check("the skill", commands.some((c) => c.name === "pdf" && c.description.includes("Fill PDF forms")), commands);
  const answer = await cx.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "/review 7 low" }],
  });
  check("the command's prompt ends its turn", answer.stopReason === "end_turn", answer);
  const thoughts = updates
    .filter((n) => n.update.sessionUpdate === "agent_thought_chunk")
    .map((n) => n.update.content.text)
    .join("");
  check("what filled it is told", thoughts.includes("/review: bash $ echo from-the-shell"), thoughts);
  const refused = await cx
    .request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/leak" }] })
    .then(() => null, (error) => error);
  check("a refused command is an error naming why", refused && String(refused.message).includes("cat secret.txt"), refused);
});
child.kill();
console.log(JSON.stringify({ ok: "all" }));
