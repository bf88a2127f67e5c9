// A whole ACP session driven by the official TypeScript client library
// (@agentclientprotocol/sdk, its `client()` app: the ClientSideConnection of 1.x was removed in
// 2.0). Run by cli/tests/suite/acp.rs with: node client.mjs GOLATO WORKDIR SCRIPT SIGNALS
// (SIGNALS: a folder outside WORKDIR where the long command says it started: a sandboxed
// command's changes to WORKDIR reach it only when the command ends)
// It prints one JSON line per check; any failure throws (exit code 1).
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [golato, work, script, signals] = process.argv.slice(2);

function check(what, ok, detail) {
  if (!ok) throw new Error(`${what}: ${JSON.stringify(detail)}`);
  console.log(JSON.stringify({ ok: what }));
}

/// `golato acp` as a child, and a connection to it through the library.
function connect(updates, permissions) {
  const child = spawn(golato, ["acp", "--script", script, "--approve", "ask"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp
    .client({ name: "golato-test-client" })
    .onNotification("session/update", ({ params }) => {
      updates.push(params);
    })
    .onRequest("session/request_permission", ({ params }) => {
      permissions.push(params);
      return { outcome: { outcome: "selected", optionId: "allow-once" } };
    });
  return { child, stream, app };
}

const until = async (what, condition) => {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > 30000) throw new Error(`${what} never happened`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

// 1. A session: a prompt whose model reads, edits (asked and allowed) and runs bash; then a
//    prompt cancelled while its command runs.
const updates = [];
const permissions = [];
const first = connect(updates, permissions);
let sessionId;
await first.app.connectWith(first.stream, async (cx) => {
  const init = await cx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  check("initialize", init.protocolVersion === 1 && init.agentCapabilities.loadSession, init);
  const created = await cx.request("session/new", { cwd: work, mcpServers: [] });
  sessionId = created.sessionId;
  check("session/new", typeof sessionId === "string" && created.modes.currentModeId === "workspace-write", created);

  const answer = await cx.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "tidy up the notes" }],
  });
  check("the prompt ends its turn", answer.stopReason === "end_turn", answer);
  const kinds = updates.map((n) => n.update.sessionUpdate);
  check("answer and reasoning streamed", kinds.includes("agent_message_chunk") && kinds.includes("agent_thought_chunk"), kinds);
  const calls = updates.filter((n) => n.update.sessionUpdate === "tool_call").map((n) => n.update);
  check("calls announced with their kind", JSON.stringify(calls.map((c) => c.kind)) === JSON.stringify(["read", "edit", "execute"]), calls);
  check("the edit's location", calls[1].locations[0].path === `${work}/notes.txt`, calls[1]);
  const done = updates.filter((n) => n.update.sessionUpdate === "tool_call_update" && n.update.status === "completed").map((n) => n.update);
  const diff = done.flatMap((u) => u.content ?? []).find((c) => c.type === "diff");
  check("the edit's diff", diff && diff.oldText === "alpha\nbeta\n" && diff.newText === "alpha\nBETA\n", diff);
  const output = done.find((u) => u.toolCallId === "c3");
  check("the command's output", output.content.some((c) => c.type === "content" && c.content.text.includes("from bash")), output);
  check("asked before the edit and the command", permissions.map((p) => p.toolCall.toolCallId).join(",") === "c2,c3", permissions);
  check("the edit is on disk", readFileSync(`${work}/notes.txt`, "utf8") === "alpha\nBETA\n", null);

  // Cancelled mid-bash: the command's marker file appears, then the client cancels.
  updates.length = 0;
  const cancelled = cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "wait" }] });
  await until("the long command", () => existsSync(`${signals}/started`));
  await cx.notify("session/cancel", { sessionId });
  const stopped = await cancelled;
  check("cancel stops the turn", stopped.stopReason === "cancelled", stopped);
});
first.child.stdin.end();
await new Promise((resolve) => first.child.on("exit", resolve));

// 2. Another connection: the session is listed and loaded, its conversation replayed.
const replayed = [];
const second = connect(replayed, []);
await second.app.connectWith(second.stream, async (cx) => {
  await cx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const listed = await cx.request("session/list", { cwd: work });
  check("session/list", listed.sessions.some((s) => s.sessionId === sessionId && s.title === "tidy up the notes"), listed);
  await cx.request("session/load", { sessionId, cwd: work, mcpServers: [] });
  const said = replayed.filter((n) => n.update.sessionUpdate === "user_message_chunk").map((n) => n.update.content.text);
  check("session/load replays the conversation", said[0] === "tidy up the notes" && said.includes("wait"), said);
  const mode = await cx.request("session/set_mode", { sessionId, modeId: "read-only" });
  check("session/set_mode", mode !== undefined, mode);
});
second.child.stdin.end();
await new Promise((resolve) => second.child.on("exit", resolve));
console.log(JSON.stringify({ ok: "all" }));
