// Drives agentbus's A2A endpoint with the official JavaScript SDK (@a2a-js/sdk) and prints
// what it saw as one JSON document. Usage: node client.mjs BASE_URL API_KEY
// It sends a question without waiting (returnImmediately), joins the running task with
// resubscribeTask, lists the caller's tasks with listTasks, and reads the task's history.
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const [base, key] = process.argv.slice(2);
const withKey = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${key}`);
  return fetch(url, { ...init, headers });
};
const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })],
});
const client = await new ClientFactory(options).createFromUrl(base);

const sent = await client.sendMessage({
  message: {
    messageId: `js-${Date.now()}`,
    role: 1, // ROLE_USER
    parts: [{ content: { $case: "text", value: "What is 23 × 19?" } }],
  },
  configuration: { returnImmediately: true },
});
const taskId = sent.id ?? sent.task?.id ?? sent.payload?.value?.id;

const updates = [];
for await (const update of client.resubscribeTask({ id: taskId })) {
  updates.push(update.payload?.$case ?? "?");
  if (update.payload?.$case === "task") {
    updates.firstState = update.payload.value.status?.state;
  }
  if (update.payload?.$case === "statusUpdate") {
    updates.lastState = update.payload.value.status?.state;
  }
}
// The TypeScript types make every field of the request required: unset ones are given.
const listed = await client.listTasks({
  tenant: "", contextId: "", status: 0, pageSize: 10, pageToken: "", historyLength: 2,
});
const task = await client.getTask({ id: taskId, historyLength: 5 });
let afterEnd = null;
try {
  for await (const _ of client.resubscribeTask({ id: taskId })) { /* nothing expected */ }
} catch (e) {
  afterEnd = e?.constructor?.name ?? String(e);
}

console.log(JSON.stringify({
  taskId,
  kinds: updates,
  firstState: updates.firstState,
  lastState: updates.lastState,
  listed: listed.tasks.map((t) => t.id),
  totalSize: listed.totalSize,
  history: task.history.map((m) => [m.role, m.parts[0]?.content?.value]),
  afterEnd,
}));
