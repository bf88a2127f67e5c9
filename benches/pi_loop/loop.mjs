// pi-agent-core's loop under the load of golato's stress example: RUNS runs at once, each a
// scripted model whose first answer is CALLS calls of a trivial `echo` tool ({value: string})
// and whose second is a text; every run's results are checked (CALLS results, in source order,
// each echoing its own call's value). Prints one JSON line: runs/s, calls/s, wall time.
//
//   npm install --prefix benches/pi_loop   (pinned: pi-agent-core 0.73.1)
//   node benches/pi_loop/loop.mjs [RUNS] [CALLS]
import { runAgentLoop } from "@mariozechner/pi-agent-core";
import { createAssistantMessageEventStream } from "@mariozechner/pi-ai";
import { Type } from "typebox";

const RUNS = Number(process.argv[2] ?? 10000);
const CALLS = Number(process.argv[3] ?? 8);

const free = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
const model = {
  id: "scripted", name: "scripted", api: "openai-completions", provider: "scripted",
  baseUrl: "http://127.0.0.1:9", reasoning: false, input: ["text"], cost: free,
  contextWindow: 128000, maxTokens: 4096,
};
const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: free };
const answer = (content, stopReason) => ({
  role: "assistant", content, api: model.api, provider: model.provider, model: model.id,
  usage, stopReason, timestamp: Date.now(),
});

// The offline model: K calls first, a text once the results are in.
const streamFn = (_model, context) => {
  const stream = createAssistantMessageEventStream();
  const answered = context.messages.some((message) => message.role === "toolResult");
  const message = answered
    ? answer([{ type: "text", text: "done" }], "stop")
    : answer(
        Array.from({ length: CALLS }, (_, i) => ({
          type: "toolCall", id: `c${i}`, name: "echo", arguments: { value: `v${i}` },
        })),
        "toolUse",
      );
  queueMicrotask(() => {
    stream.push({ type: "start", partial: message });
    stream.push({ type: "done", reason: message.stopReason, message });
  });
  return stream;
};

const echo = {
  name: "echo", label: "echo", description: "Returns its value.",
  parameters: Type.Object({ value: Type.String() }),
  execute: async (_id, params) => ({ content: [{ type: "text", text: params.value }], details: {} }),
};

const config = { model, convertToLlm: (messages) => messages, toolExecution: "parallel" };

async function run() {
  const context = { systemPrompt: "", messages: [], tools: [echo] };
  const prompt = { role: "user", content: "go", timestamp: Date.now() };
  const messages = await runAgentLoop([prompt], context, config, () => {}, undefined, streamFn);
  const results = messages.filter((message) => message.role === "toolResult");
  if (results.length !== CALLS) throw new Error(`${results.length} results, not ${CALLS}`);
  results.forEach((result, i) => {
    if (result.isError || result.toolCallId !== `c${i}` || result.content[0].text !== `v${i}`) {
      throw new Error(`result ${i} is wrong: ${JSON.stringify(result)}`);
    }
  });
}

const started = performance.now();
await Promise.all(Array.from({ length: RUNS }, run));
const wall = (performance.now() - started) / 1000;
console.log(JSON.stringify({
  runs: RUNS, calls_per_run: CALLS, wall_s: wall,
  runs_per_s: RUNS / wall, calls_per_s: (RUNS * CALLS) / wall,
  peak_rss_mib: process.resourceUsage().maxRSS / 1024,
}));
