// Drives agentbus's AG-UI endpoint with the official client (@ag-ui/client's HttpAgent) as a
// front end with a tool of its own would, and prints what it saw as one JSON document.
// Usage: node client.mjs BASE_URL API_KEY NODE_MODULES (where tests/npm.py installed it)
// The first run offers the front end's get_weather; the model calls it, so the run hands
// the call over and finishes. The front end runs the tool, adds the tool message and runs
// the agent again: that input resumes the paused run, which answers.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [base, key, modules] = process.argv.slice(2);
const { HttpAgent } = await import(
  pathToFileURL(join(modules, "@ag-ui", "client", "dist", "index.mjs")).href
);
const tools = [
  {
    name: "get_weather",
    description: "The weather in a city, now.",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    },
  },
];
const agent = new HttpAgent({
  url: `${base}/api/v1/ag-ui`,
  headers: { Authorization: `Bearer ${key}` },
  threadId: `js-thread-${Date.now()}`,
  initialMessages: [{ id: "u1", role: "user", content: "What is the weather in Paris?" }],
});

const seen = [];
const watch = { onEvent: ({ event }) => { seen.push(event.type); } };
const first = await agent.runAgent({ runId: "run-1", tools }, watch);
const asked = agent.messages.findLast((m) => m.role === "assistant" && m.toolCalls?.length);
const calls = (asked?.toolCalls ?? []).map((c) => ({
  id: c.id, name: c.function.name, arguments: JSON.parse(c.function.arguments),
}));
const firstEvents = [...seen];
seen.length = 0;
for (const call of calls) {
  agent.addMessage({ id: `result-${call.id}`, role: "tool", toolCallId: call.id, content: "18 °C and sunny" });
}
const second = await agent.runAgent({ runId: "run-2", tools }, watch);
const answer = agent.messages.findLast((m) => m.role === "assistant" && m.content)?.content ?? null;

console.log(JSON.stringify({
  calls,
  firstResult: first.result ?? null,
  firstEvents,
  secondEvents: [...seen],
  answer,
  secondResult: second.result ?? null,
}));
