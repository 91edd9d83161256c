// Drives agentbus's A2A push notification configs with the official JavaScript SDK
// (@a2a-js/sdk) and prints what it saw as one JSON document.
// Usage: node push.mjs BASE_URL API_KEY WEBHOOK_URL
// It sends a question whose configuration names the webhook, then creates, reads, lists and
// deletes a second config on the task, and reads the deleted one again.
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const [base, key, hook] = process.argv.slice(2);
const withKey = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${key}`);
  return fetch(url, { ...init, headers });
};
const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })],
});
const client = await new ClientFactory(options).createFromUrl(base);
// The TypeScript types make every field of a request required: unset ones are given.
const config = (id, taskId) => ({
  tenant: "", id, taskId, url: hook, token: `token-${id}`,
  authentication: { scheme: "Bearer", credentials: "js-secret" },
});

const sent = await client.sendMessage({
  message: {
    messageId: `js-push-${Date.now()}`,
    role: 1, // ROLE_USER
    parts: [{ content: { $case: "text", value: "What is 23 × 19?" } }],
  },
  configuration: { taskPushNotificationConfig: config("", "") },
});
const taskId = sent.id ?? sent.task?.id ?? sent.payload?.value?.id;
const made = await client.createTaskPushNotificationConfig(config("js-2", taskId));
const got = await client.getTaskPushNotificationConfig({ tenant: "", taskId, id: "js-2" });
const listed = await client.listTaskPushNotificationConfig({
  tenant: "", taskId, pageSize: 0, pageToken: "",
});
await client.deleteTaskPushNotificationConfig({ tenant: "", taskId, id: "js-2" });
let afterDelete = null;
try {
  await client.getTaskPushNotificationConfig({ tenant: "", taskId, id: "js-2" });
} catch (e) {
  afterDelete = e?.constructor?.name ?? String(e);
}

console.log(JSON.stringify({
  taskId,
  made: [made.id, made.taskId, made.url],
  got: [got.id, got.token, got.authentication?.scheme, got.authentication?.credentials ?? ""],
  listed: listed.configs.map((c) => c.id).sort(),
  afterDelete,
}));
