// `golato acp --restate` driven by the official TypeScript client library: a session whose
// prompts are durable runs. Run by cli/tests/suite/durable_acp.rs with:
//   node durable_client.mjs GOLATO WORKDIR SIGNALS INGRESS ADMIN
// The workers (golato serve --approve ask) replay the script: turn 1 a command that asks, says
// it started (SIGNALS/started) and waits for SIGNALS/release; turn 2 the answer; turn 3 (the
// second prompt) a command waiting for SIGNALS/release2, turn 4 the answer after the steering;
// turn 5 (the third prompt) a long command (SIGNALS/started3); turn 6 not reached.
// It prints one JSON line per check; any failure throws (exit code 1).
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [golato, work, signals, ingress, admin] = process.argv.slice(2);

function check(what, ok, detail) {
  if (!ok) throw new Error(`${what}: ${JSON.stringify(detail)}`);
  console.log(JSON.stringify({ ok: what }));
}

function connect(updates, permissions) {
  const child = spawn(
    golato,
    // No model flags: the workers ask the model; this process needs no provider or key.
    ["acp", "--restate", ingress, "--restate-admin", admin],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp
    .client({ name: "golato-durable-test-client" })
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
    if (Date.now() - started > 60000) throw new Error(`${what} never happened`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

const texts = (updates) =>
  updates
    .filter((n) => n.update.sessionUpdate === "agent_message_chunk")
    .map((n) => n.update.content.text)
    .join("");

// 1. A session; its prompt's command is asked about (answered yes by this client) and starts;
//    then this `golato acp` is killed while the run goes on on the server.
const updates = [];
const permissions = [];
const first = connect(updates, permissions);
const exited = new Promise((resolve) => first.child.on("exit", resolve));
let sessionId;
first.app
  .connectWith(first.stream, async (cx) => {
    await cx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    const created = await cx.request("session/new", { cwd: work, mcpServers: [] });
    sessionId = created.sessionId;
    // Never answered: the process dies first.
    cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "do the slow thing" }] }).catch(() => {});
    await until("the command to start", () => existsSync(`${signals}/started`));
    check("the question reached the client as a permission request", permissions.length === 1 && permissions[0].toolCall.toolCallId === "c1", permissions);
    check("the call was announced", updates.some((n) => n.update.sessionUpdate === "tool_call" && n.update.toolCallId === "c1"), updates);
    first.child.kill("SIGKILL");
    await new Promise(() => {});
  })
  .catch(() => {});
await exited;
check("the first golato acp is gone", true, null);

// 2. A new `golato acp` loads the session: the conversation up to the prompt, then the run from
//    its events, live: released, it ends with the model's answer.
const replayed = [];
const second = connect(replayed, []);
await second.app.connectWith(second.stream, async (cx) => {
  await cx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  await cx.request("session/load", { sessionId, cwd: work, mcpServers: [] });
  const said = replayed.filter((n) => n.update.sessionUpdate === "user_message_chunk").map((n) => n.update.content.text);
  check("session/load replays the prompt", said.includes("do the slow thing"), said);
  await until("the running call, from the run's events", () =>
    replayed.some((n) => n.update.sessionUpdate === "tool_call" && n.update.toolCallId === "c1"));
  writeFileSync(`${signals}/release`, "");
  await until("the run's answer", () => texts(replayed).includes("slow thing done"));
  const done = replayed.filter((n) => n.update.sessionUpdate === "tool_call_update" && n.update.toolCallId === "c1" && n.update.status === "completed");
  check("the command completed once, on the worker", done.length === 1, done);

  // 3. The next prompt goes on from the conversation; a prompt sent while its command runs
  //    steers the run (shown as delivered at once, taken after the command), and both are
  //    answered when the run ends.
  replayed.length = 0;
  const steered = cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "now steer" }] });
  await until("the second command", () => existsSync(`${signals}/started2`));
  const steering = cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "and say hi" }] });
  await until("the steering delivered", () =>
    replayed.some((n) => n.update.sessionUpdate === "user_message_chunk" && n.update.content.text === "and say hi"));
  writeFileSync(`${signals}/release2`, "");
  const [first_answer, second_answer] = [await steered, await steering];
  check("the steered run ends both prompts", first_answer.stopReason === "end_turn" && second_answer.stopReason === "end_turn", [first_answer, second_answer]);
  check("the run went on after the steering", texts(replayed).includes("steered done"), texts(replayed));

  // 4. session/cancel cancels the next prompt's run.
  const cancelled = cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "now wait" }] });
  await until("the long command", () => existsSync(`${signals}/started3`));
  await cx.notify("session/cancel", { sessionId });
  const stopped = await cancelled;
  check("session/cancel cancels the durable run", stopped.stopReason === "cancelled", stopped);
});
second.child.stdin.end();
await new Promise((resolve) => second.child.on("exit", resolve));
console.log(JSON.stringify({ ok: "all" }));
